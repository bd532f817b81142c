"""The solver protocol: ``solver.solve(objective, theta0, vali=None) -> Solution``.

``objective`` is a :class:`rankstudy.solvers.objective.Objective` (or any object with the
interface a solver needs: L-BFGS calls it for ``(value, grad)`` and ``data_loss``), ``theta0``
the start point, ``vali`` the same objective on the validation split, used only to record
the training curve. A solver is a small object whose settings are plain data; a new one is
one class plus one entry in :data:`rankstudy.solvers.registry.SOLVERS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Solution:
    theta: np.ndarray
    n_iter: int
    n_fev: int
    converged: bool
    # training curve: one dict per iteration ({"step": k, "objective", "train_loss", "vali_loss"})
    history: list[dict] = field(default_factory=list)
    # the step whose parameters ``theta`` holds, when a solver keeps its best one (early stopping)
    best_step: int | None = None
