"""SciPy's L-BFGS-B on a smooth objective."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from rankstudy.solvers import settings
from rankstudy.solvers.base import Solution
from rankstudy.util.progress import Progress


class LBFGS(settings.Declared):
    """Quasi-Newton minimisation of ``objective(theta) -> (value, grad)``; stops after
    ``max_iter`` iterations or when SciPy's ``tol`` criteria are met.

    History: one dict per iteration (step 0 = the start point) with ``objective`` (loss +
    penalty), ``train_loss`` and, when ``vali`` is given, ``vali_loss``.
    """

    name = "lbfgs"

    parameters = settings.LBFGS

    def solve(self, objective, theta0: np.ndarray, vali=None) -> Solution:
        history: list[dict] = []
        progress = Progress("lbfgs", total=self.max_iter, unit="iteration")

        def record(theta: np.ndarray, value: float) -> None:
            entry = {"step": len(history), "objective": float(value),
                     "train_loss": float(objective.data_loss(theta))}
            if vali is not None:
                entry["vali_loss"] = float(vali.data_loss(theta))
            history.append(entry)
            if entry["step"]:
                progress.update(entry["step"], objective=entry["objective"])

        # SciPy's first evaluation is at theta0 too: evaluate there once, with the gradient,
        # for both the history's step 0 and SciPy (on a short run the start point's second
        # evaluation was a sizeable share of the fit)
        start = np.array(theta0, dtype=np.float64)
        at_start = [objective(start)]  # emptied by SciPy's first call
        record(start, at_start[0][0])

        def fun(theta: np.ndarray):
            if at_start and np.array_equal(theta, start):
                return at_start.pop()
            at_start.clear()
            return objective(theta)

        # SciPy hands the callback an OptimizeResult only if its parameter has exactly this name
        result = minimize(fun, theta0, jac=True, method="L-BFGS-B", tol=self.tol,
                          options={"maxiter": self.max_iter},
                          callback=lambda intermediate_result: record(intermediate_result.x,
                                                                      intermediate_result.fun))
        return Solution(theta=np.asarray(result.x, dtype=np.float64), n_iter=int(result.nit),
                        n_fev=int(result.nfev), converged=bool(result.success), history=history)
