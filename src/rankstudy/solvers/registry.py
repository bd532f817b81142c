"""Every solver by name (see :mod:`rankstudy.solvers.base`). A new solver is one class plus
one entry here."""

from __future__ import annotations

from rankstudy.solvers.cutting_plane import CuttingPlane
from rankstudy.solvers.lbfgs import LBFGS
from rankstudy.solvers.projected_sgd import ProjectedSGD
from rankstudy.util.names import lookup

SOLVERS: dict[str, type] = {
    "lbfgs": LBFGS,
    "cutting_plane": CuttingPlane,
    "projected_sgd": ProjectedSGD,
}


def solver_class(name: str) -> type:
    return lookup(SOLVERS, name, "solver")
