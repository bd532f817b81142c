"""The 1-slack cutting-plane solver of structural SVMs (Joachims, Finley and Yu 2009), in the
form of a bundle method for regularised risk (Teo et al. 2010): minimise

    J(w) = l2/2 ||w||^2 + R(w),   R = the loss, convex (e.g. a structured hinge),

given only R(w) and a subgradient a at any w. Each iteration adds the cutting plane
R(v) >= a'v + b (b = R(w) - a'w) at the current w; the working set of planes gives the
lower model max(0, max_i a_i'v + b_i) of R, and the next w minimises l2/2 ||v||^2 + that
model: a small QP, solved in its dual

    max_alpha  b'alpha - 1/(2 l2) ||A'alpha||^2   s.t.  alpha >= 0, sum alpha <= 1,
    w = -A'alpha / l2,

by a maintained QP library (qpsolvers with Clarabel), never by hand.

Why 1-slack rather than n-slack: with R the mean of the per-query hinges, one plane sums
the most violated constraint of every query, so a single argmax pass over the queries gives
one constraint and the working set stays small (its size does not grow with the number of
queries); the n-slack form would add up to |Q| constraints per pass. Both have the same
optimum at l2 = 1/C (Chakrabarti et al., Eq. 1).

Stopping: when the new plane is violated by at most ``epsilon`` at the current w, i.e.
R(w) <= model(w) + epsilon, no constraint of any query is violated by more than epsilon in
the 1-slack sense. The dual value is a lower bound of min J, so ``dual_gap`` (best J so far
minus the dual value) bounds the distance to the optimum.
"""

from __future__ import annotations

import time

import numpy as np
import qpsolvers
import scipy.sparse as sp

from rankstudy.solvers.base import Solution
from rankstudy.util.progress import Progress


class CuttingPlane:
    """Cutting-plane training with the working-set QP solved by ``qp_solver`` (a name
    qpsolvers knows, default Clarabel). ``epsilon`` is the violation tolerance.

    History: one dict per iteration with ``objective`` (J at the current w), ``train_loss``
    (R), ``lower_bound`` (the dual value, below min J), ``dual_gap`` (best J minus that), ``violation``, ``working_set`` (planes), ``argmax_seconds`` (time in the
    loss and its subgradient, i.e. the loss-augmented inference) and ``qp_seconds``, plus
    ``vali_loss`` when ``vali`` is given.
    """

    name = "cutting_plane"

    def __init__(self, epsilon: float = 1e-3, max_iter: int = 500, qp_solver: str = "clarabel") -> None:
        if not epsilon > 0:
            raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
        if int(max_iter) < 1:
            raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")
        if qp_solver not in qpsolvers.available_solvers:
            raise ValueError(f"QP solver {qp_solver!r} is not installed; available: "
                             f"{', '.join(qpsolvers.available_solvers)}")
        self.epsilon = float(epsilon)
        self.max_iter = int(max_iter)
        self.qp_solver = qp_solver

    def solve(self, objective, theta0: np.ndarray, vali=None) -> Solution:
        l2 = float(objective.l2)
        if not l2 > 0:
            raise ValueError("the cutting-plane solver needs l2 > 0 (l2 = 1/C)")
        if objective.scorer.n_penalized != objective.n_params:
            raise ValueError("the cutting-plane solver needs every parameter penalised (no bias)")
        w = np.asarray(theta0, dtype=np.float64).copy()
        planes: list[np.ndarray] = []
        offsets: list[float] = []
        history: list[dict] = []
        best_objective, best_w = np.inf, w
        dual, converged, qp_seconds = 0.0, False, 0.0
        progress = Progress("cutting plane", total=self.max_iter, unit="iteration")
        for step in range(self.max_iter + 1):
            start = time.perf_counter()
            risk, grad = objective.risk(w)
            argmax_seconds = time.perf_counter() - start
            model = max(0.0, max((a @ w + b for a, b in zip(planes, offsets)), default=0.0))
            value = risk + 0.5 * l2 * float(w @ w)
            if value < best_objective:
                best_objective, best_w = value, w
            violation = risk - model
            entry = {"step": step, "objective": value, "train_loss": risk, "lower_bound": dual,
                     "dual_gap": best_objective - dual,
                     "violation": violation, "working_set": len(planes), "argmax_seconds": argmax_seconds,
                     "qp_seconds": qp_seconds}
            if vali is not None:
                entry["vali_loss"] = float(vali.data_loss(w))
            history.append(entry)
            progress.update(step, objective=value, violation=violation, working_set=len(planes))
            if violation <= self.epsilon:
                converged = True
                break
            if step == self.max_iter:
                break
            planes.append(np.asarray(grad, dtype=np.float64).copy())
            offsets.append(risk - float(grad @ w))
            start = time.perf_counter()
            alpha, dual = self._dual(np.array(planes), np.array(offsets), l2)
            w = -(alpha @ np.array(planes)) / l2
            qp_seconds = time.perf_counter() - start
        # the last w solves the model QP; the best J seen is reported for the gap, and the
        # returned w is the one the stopping rule certified (or the best seen, if stopped early)
        theta = w if converged else best_w
        return Solution(theta=theta, n_iter=len(history) - 1, n_fev=len(history), converged=converged,
                        history=history)

    def _dual(self, A: np.ndarray, b: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
        """alpha maximising b'alpha - ||A'alpha||^2 / (2 l2) on the simplex-or-below, and the value."""
        n = len(b)
        gram = (A @ A.T) / l2
        gram = 0.5 * (gram + gram.T) + 1e-12 * np.eye(n)  # symmetric, and PD for the solver
        alpha = qpsolvers.solve_qp(sp.csc_matrix(gram), -b, G=sp.csc_matrix(np.ones((1, n))), h=np.array([1.0]),
                                   lb=np.zeros(n), solver=self.qp_solver)
        if alpha is None:
            raise RuntimeError(f"the working-set QP ({n} planes) was not solved by {self.qp_solver}")
        alpha = np.clip(alpha, 0.0, None)
        return alpha, float(b @ alpha - 0.5 * alpha @ gram @ alpha)
