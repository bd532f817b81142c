"""Constrained stochastic gradient descent, as Huang and Frey (2008, Section 5) train StructRank:
one query at a time (a seeded random order per epoch), theta <- theta - alpha grad L_q(theta),
with the step halved until the update is feasible: theta >= 0 where the objective requires it
(kernel bandwidths, CDN weights) and ||theta||_1 <= ``l1_bound`` (the regulariser, Eq. 10).
alpha starts at ``step`` and is scaled by ``decay`` after each epoch."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from rankstudy.solvers.base import Solution
from rankstudy.util.progress import Progress


class ProjectedSGD:
    """History: one dict per epoch (step 0 = the start) with ``train_loss`` (at step 0 over the
    whole training split, then the mean over the epoch's queries of their loss when met),
    ``vali_loss`` when ``vali`` is given, ``step_size`` and
    ``halvings`` (how often a step was shrunk to stay feasible in that epoch), and over every
    update of the epoch the smallest constrained parameter (``min_constrained``) and the largest
    L1 norm (``max_l1``). An update that stays infeasible after ``max_halvings`` halvings is
    skipped (counted in ``skipped``)."""

    name = "projected_sgd"

    def __init__(self, step: float = 0.5, decay: float = 2 ** -0.5, epochs: int = 10, l1_bound: float | None = None,
                 max_halvings: int = 30, seed: int = 0, progress: Callable[[str], None] = print) -> None:
        if not step > 0 or not 0 < decay <= 1:
            raise ValueError(f"need step > 0 and 0 < decay <= 1, got step={step!r}, decay={decay!r}")
        if int(epochs) < 1:
            raise ValueError(f"epochs must be >= 1, got {epochs!r}")
        if l1_bound is not None and not l1_bound > 0:
            raise ValueError(f"l1_bound must be > 0, got {l1_bound!r}")
        self.step, self.decay, self.epochs = float(step), float(decay), int(epochs)
        self.l1_bound = None if l1_bound is None else float(l1_bound)
        self.max_halvings, self.seed = int(max_halvings), int(seed)
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

    def solve(self, objective, theta0: np.ndarray, vali=None) -> Solution:
        nonnegative = objective.nonnegative
        theta = self.start(np.asarray(theta0, dtype=np.float64), nonnegative)
        queries = [objective.for_queries([q]) for q in range(objective.data.n_queries)]
        rng = np.random.default_rng(self.seed)
        history: list[dict] = []
        alpha = self.step
        n_fev = 0

        def record(epoch: int, halvings: int, skipped: int, lowest: float, widest: float,
                   seen_loss: float | None) -> None:
            # the training loss of an epoch is the mean of its queries' losses as they were met
            # (a second pass over the training split would double the cost of an epoch)
            train_loss = objective.data_loss(theta) if seen_loss is None else seen_loss
            entry = {"step": epoch, "train_loss": float(train_loss), "step_size": alpha, "halvings": halvings,
                     "skipped": skipped, "min_constrained": lowest, "max_l1": widest}
            if vali is not None:
                entry["vali_loss"] = float(vali.data_loss(theta))
            history.append(entry)

        def extent(theta: np.ndarray) -> tuple[float, float]:
            return (float(theta[nonnegative].min(initial=np.inf)), float(np.abs(theta).sum()))

        record(0, 0, 0, *extent(theta), None)
        for epoch in range(1, self.epochs + 1):
            halvings = skipped = 0
            lowest, widest = extent(theta)
            seen = []
            start = time.perf_counter()
            within = Progress(f"sgd epoch {epoch}/{self.epochs}", total=len(queries), unit="query")
            for done, q in enumerate(rng.permutation(len(queries)), 1):
                _, grad = queries[q](theta)
                seen.append(queries[q].last_loss)
                n_fev += 1
                step = alpha
                for _ in range(self.max_halvings + 1):
                    candidate = theta - step * grad
                    if self.feasible(candidate, nonnegative):
                        theta = candidate
                        low, wide = extent(theta)
                        lowest, widest = min(lowest, low), max(widest, wide)
                        break
                    step *= 0.5
                    halvings += 1
                else:
                    skipped += 1
                if done < len(queries):  # the epoch's own line below reports its end
                    within.update(done)
            record(epoch, halvings, skipped, lowest, widest, float(np.mean(seen)))
            self.progress(f"epoch {epoch}/{self.epochs}: train loss {history[-1]['train_loss']:.5g}"
                          + (f", vali loss {history[-1]['vali_loss']:.5g}" if vali is not None else "")
                          + f", step {alpha:.3g} ({time.perf_counter() - start:.1f} s)")
            alpha *= self.decay
        return Solution(theta=theta, n_iter=self.epochs, n_fev=n_fev, converged=True, history=history)
