"""Constrained stochastic gradient descent, as Huang and Frey (2008, Section 5) train StructRank:
one query at a time (a seeded random order per epoch), theta <- theta - alpha g_q, kept feasible:
theta >= 0 where the objective requires it (kernel bandwidths, CDN weights) and ||theta||_1 <=
``l1_bound`` (the regulariser, Eq. 10). alpha starts at ``step`` and is scaled by ``decay``
after each epoch.

The paper: "we prevent updates from violating the inequality constraints in the optimization
problem defined by Equation (10) by reducing the learning rate alpha until the update becomes
feasible. We set the default learning rate to alpha = 0.5 [...] alpha was scaled by 1/sqrt(2)
at the end of each epoch." That recipe is ``feasibility="halve", step_rule="plain"``, and with
the paper's summed loss it cannot train on OHSUMED. Fold 1 (62 training queries, ~5,900 edges
each), disconnected CDN with the Nadaraya-Watson ranking function, 3 epochs from one random start,
training loss from start to end (sum: the paper's -log F; mean: per CDN function):

    loss  feasibility  step_rule   l1_bound 10              l1_bound 100
    sum   halve        plain       4105.5 -> 4073.8 (-0.8%)  4052.1 -> 6625.1 (+63%)
    mean  halve        plain       0.6922 -> 0.6922 (0.0%)   0.6822 -> 0.6691 (-1.9%)
    mean  project      plain       0.6922 -> 0.6916 (-0.1%)  0.6822 -> 0.6691 (-1.9%)
    sum   project      adagrad     4105.5 -> 3991.5 (-2.8%)  4052.1 -> 3773.3 (-6.9%)
    mean  halve        adagrad     0.6922 -> 0.6907 (-0.2%)  0.6822 -> 0.6293 (-7.8%)
    mean  project      adagrad     0.6922 -> 0.6630 (-4.2%)  0.6822 -> 0.6288 (-7.8%)

(log 2 = 0.693 is a constant score's loss; linear RankNet fitted by L-BFGS reaches 0.633.) Why:

* halving cannot move along the boundary of the L1 ball. 47 parameters drawn in [0, 1] (L1 norm
  ~23.5) are scaled into the ball of 10; there, an update is feasible at some step only if its
  components sum to >= 0, and a wider kernel and larger CDN weights lower the loss (every
  component of the gradient is <= 0 at the start in 23 of the 62 queries): 19-30
  of the 62 updates of an epoch were skipped after 30 halvings and the others were halved ~18
  times (1,131-1,334 halvings per epoch), to keep near-0 bandwidths >= 0. ``feasibility=
  "project"`` (the default) takes the Euclidean projection onto {theta >= 0 where required,
  ||theta||_1 <= l1_bound} instead (Duchi et al. 2008), which moves mass between coordinates
  along the boundary;
* a step of fixed length meets gradients of any size. The summed loss's per-query gradients
  had a median L1 norm of 25 (disconnected) to 9e4 (full): with l1_bound 100 the first epoch
  doubled the training loss (4,052 -> 8,055). The mean's are ~1e-2 (the bandwidths' ~5e-5), so
  a step of 0.5 barely moves them. ``step_rule="adagrad"`` (the default) divides each component
  by the root of the sum of its squared gradients so far (AdaGrad, Duchi, Hazan and Singer
  2011), so each parameter's first step is alpha long whatever the loss's scale; the paper's
  alpha and its decay per epoch are kept on top.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from rankstudy.solvers import settings
from rankstudy.solvers.base import Solution
from rankstudy.util.progress import Progress



def project_l1(theta: np.ndarray, nonnegative: np.ndarray, bound: float | None) -> np.ndarray:
    """The nearest point (Euclidean) with theta >= 0 where ``nonnegative`` and ||theta||_1 <=
    ``bound``: constrained entries clipped at 0, then every magnitude soft-thresholded by the
    tau that brings the norm to the bound (Duchi et al. 2008). Clipping first is exact: a
    constrained entry below 0 is 0 at the projection whatever tau is."""
    theta = np.where(nonnegative, np.maximum(theta, 0.0), theta)
    size = np.abs(theta)
    if bound is None or size.sum() <= bound:
        return theta
    u = np.sort(size)[::-1]
    excess = (np.cumsum(u) - bound) / np.arange(1, len(u) + 1)
    tau = excess[np.flatnonzero(u > excess)[-1]]
    return np.sign(theta) * np.maximum(size - tau, 0.0)


class ProjectedSGD(settings.Declared):
    """History: one dict per epoch (step 0 = the start) with ``train_loss`` (at step 0 over the
    whole training split, then the mean over the epoch's queries of their loss when met),
    ``vali_loss`` when ``vali`` is given, ``step_size``, ``projected`` (how many updates the
    projection changed), ``halvings`` (how often a step was shrunk to stay feasible in that
    epoch) and ``skipped`` (updates still infeasible after ``max_halvings`` halvings, not
    taken), and over every update of the epoch the smallest constrained parameter
    (``min_constrained``) and the largest L1 norm (``max_l1``)."""

    name = "projected_sgd"

    parameters = settings.PROJECTED_SGD

    def __init__(self, progress: Callable[[str], None] = print, **given) -> None:
        """``given``: any of :data:`rankstudy.solvers.settings.PROJECTED_SGD` (checked), the others
        their defaults."""
        super().__init__(**given)
        self.progress = progress  # an epoch can take minutes (e.g. a full CDN on long queries)

    def feasible(self, theta: np.ndarray, nonnegative: np.ndarray) -> bool:
        if np.any(theta[nonnegative] < 0):
            return False
        return self.l1_bound is None or float(np.abs(theta).sum()) <= self.l1_bound * (1 + 1e-12)

    def start(self, theta0: np.ndarray, nonnegative: np.ndarray) -> np.ndarray:
        """theta0 made feasible: negative entries that must not be clipped to 0, then scaled into the L1 ball."""
        theta = np.where(nonnegative, np.maximum(theta0, 0.0), theta0).astype(np.float64)
        norm = float(np.abs(theta).sum())
        if self.l1_bound is not None and norm > self.l1_bound:
            theta *= self.l1_bound / norm
        return theta

    def update(self, theta: np.ndarray, direction: np.ndarray, alpha: float,
               nonnegative: np.ndarray) -> tuple[np.ndarray | None, int, bool]:
        """One feasible step theta - alpha direction: (new theta or None if skipped, halvings,
        whether the projection changed it)."""
        candidate = theta - alpha * direction
        if self.feasibility == "project":
            projected = project_l1(candidate, nonnegative, self.l1_bound)
            return projected, 0, not np.array_equal(projected, candidate)
        step = alpha
        for halvings in range(self.max_halvings + 1):
            if self.feasible(candidate, nonnegative):
                return candidate, halvings, False
            step *= 0.5
            candidate = theta - step * direction
        return None, self.max_halvings + 1, False

    def solve(self, objective, theta0: np.ndarray, vali=None) -> Solution:
        nonnegative = objective.nonnegative
        theta = self.start(np.asarray(theta0, dtype=np.float64), nonnegative)
        queries = [objective.for_queries([q]) for q in range(objective.data.n_queries)]
        rng = np.random.default_rng(self.seed)
        history: list[dict] = []
        alpha = self.step
        n_fev = 0
        squares = np.zeros_like(theta)  # AdaGrad: sum of squared gradients per component

        def record(epoch: int, counts: dict, lowest: float, widest: float, seen_loss: float | None) -> None:
            # the training loss of an epoch is the mean of its queries' losses as they were met
            # (a second pass over the training split would double the cost of an epoch)
            train_loss = objective.data_loss(theta) if seen_loss is None else seen_loss
            entry = {"step": epoch, "train_loss": float(train_loss), "step_size": alpha, **counts,
                     "min_constrained": lowest, "max_l1": widest}
            if vali is not None:
                entry["vali_loss"] = float(vali.data_loss(theta))
            history.append(entry)

        def extent(theta: np.ndarray) -> tuple[float, float]:
            return (float(theta[nonnegative].min(initial=np.inf)), float(np.abs(theta).sum()))

        record(0, {"projected": 0, "halvings": 0, "skipped": 0}, *extent(theta), None)
        for epoch in range(1, self.epochs + 1):
            counts = {"projected": 0, "halvings": 0, "skipped": 0}
            lowest, widest = extent(theta)
            seen = []
            start = time.perf_counter()
            within = Progress(f"sgd epoch {epoch}/{self.epochs}", total=len(queries), unit="query")
            for done, q in enumerate(rng.permutation(len(queries)), 1):
                _, grad = queries[q](theta)
                seen.append(queries[q].last_loss)
                n_fev += 1
                if self.step_rule == "adagrad":
                    squares += grad * grad
                    grad = np.divide(grad, np.sqrt(squares), out=np.zeros_like(grad), where=squares > 0)
                new, halvings, projected = self.update(theta, grad, alpha, nonnegative)
                counts["halvings"] += halvings
                counts["projected"] += projected
                if new is None:
                    counts["skipped"] += 1
                else:
                    theta = new
                    low, wide = extent(theta)
                    lowest, widest = min(lowest, low), max(widest, wide)
                if done < len(queries):  # the epoch's own line below reports its end
                    within.update(done)
            record(epoch, counts, lowest, widest, float(np.mean(seen)))
            self.progress(f"epoch {epoch}/{self.epochs}: train loss {history[-1]['train_loss']:.5g}"
                          + (f", vali loss {history[-1]['vali_loss']:.5g}" if vali is not None else "")
                          + f", step {alpha:.3g} ({time.perf_counter() - start:.1f} s)")
            alpha *= self.decay
        return Solution(theta=theta, n_iter=self.epochs, n_fev=n_fev, converged=True, history=history)
