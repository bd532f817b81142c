"""Every solver by name (see :mod:`rankstudy.solvers.base`), with its declared settings
(:mod:`rankstudy.solvers.settings`) and what it needs of a loss. A new solver is one class plus one entry here.

Which solver fits which loss (:func:`check_solver`), from the loss's entry in
:data:`rankstudy.losses.registry.LOSSES`:

* ``lbfgs``: a smooth loss (a gradient everywhere);
* ``cutting_plane``: a loss it can bound from below by planes (``convex`` in the scores, and
  scores linear in the parameters), every parameter penalised (no bias) and ``l2 > 0``;
* ``projected_sgd``: any loss with a (sub)gradient;
* ``adam``: any loss with a (sub)gradient, any scorer (minibatch Adam; what neural scorers use).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rankstudy.solvers import settings
from rankstudy.util.lazy import load
from rankstudy.util.names import lookup
from rankstudy.util.params import Param, ParamError


@dataclass(frozen=True)
class SolverEntry:
    """``path``: ``"module:Class"`` of the solver, imported when it is built (the cutting-plane
    solver's QP library alone costs a job 0.4 s); ``parameters`` its settings
    (:mod:`rankstudy.solvers.settings`, known without that import)."""

    path: str
    parameters: dict[str, Param]
    needs_smooth: bool = False
    needs_convex_unbiased: bool = False

    @property
    def cls(self) -> type:
        return load(self.path)


SOLVERS: dict[str, SolverEntry] = {
    "lbfgs": SolverEntry("rankstudy.solvers.lbfgs:LBFGS", settings.LBFGS, needs_smooth=True),
    "cutting_plane": SolverEntry("rankstudy.solvers.cutting_plane:CuttingPlane", settings.CUTTING_PLANE,
                                 needs_convex_unbiased=True),
    "projected_sgd": SolverEntry("rankstudy.solvers.projected_sgd:ProjectedSGD", settings.PROJECTED_SGD),
    "adam": SolverEntry("rankstudy.solvers.adam:Adam", settings.ADAM),
}


def solver_class(name: str) -> type:
    return lookup(SOLVERS, name, "solver").cls


def make_solver(name: str, common: Mapping | None = None, own: Mapping | None = None):
    """The solver ``name`` with the ``common`` settings it declares (a ranker's ``max_iter``,
    ``tol``, ``seed``: each solver takes those it has) and its ``own`` (all checked: a ranker's
    ``solver_params``)."""
    entry = lookup(SOLVERS, name, "solver")
    taken = {key: value for key, value in (common or {}).items() if key in entry.parameters}
    return entry.cls(**{**taken, **(own or {})})


def check_solver_params(name: str, own: Mapping | None, reserved: tuple[str, ...] = ()) -> None:
    """ParamError naming ``solver_params.KEY`` when solver ``name`` has no such setting, the
    value is refused, or the ranker sets it itself (``reserved``: its own parameters)."""
    entry = lookup(SOLVERS, name, "solver")
    for key in own or {}:
        if key in reserved:
            raise ParamError(f"solver_params.{key}", f"{key} is the ranker's own parameter: set it there, not in solver_params")
    try:
        settings.settled(entry.parameters, dict(own or {}), name)
    except ParamError as exc:
        raise ParamError(f"solver_params.{exc.param}", exc.problem) from None


def fits(name: str, loss, *, l2: float, linear: bool = True, kinks: bool = False) -> bool:
    """Whether solver ``name`` can minimise ``loss`` (a registry entry) + l2/2 ||theta||^2 of a
    scorer that is (``linear``) or is not linear in its parameters; ``kinks`` lets a solver that
    wants a smooth loss take one with kinks anyway (a comparison made on purpose)."""
    entry = lookup(SOLVERS, name, "solver")
    if entry.needs_smooth and not loss.smooth and not kinks:
        return False
    return not entry.needs_convex_unbiased or (loss.convex and linear and not loss.bias and l2 > 0)


def check_solver(name: str, loss_name: str, loss, *, l2: float, linear: bool = True, kinks: bool = False) -> None:
    """ValueError naming the solvers that fit, if ``name`` does not fit the loss."""
    lookup(SOLVERS, name, "solver")
    if not fits(name, loss, l2=l2, linear=linear, kinks=kinks):
        valid = [s for s in SOLVERS if fits(s, loss, l2=l2, linear=linear, kinks=kinks)]
        raise ValueError(f"solver {name!r} cannot fit loss {loss_name!r} (l2 = {l2:g}; the loss is "
                         f"{'smooth' if loss.smooth else 'not smooth'}, {'convex' if loss.convex else 'not convex'}, "
                         f"{'needs' if loss.bias else 'has no'} bias; the scores are "
                         f"{'' if linear else 'not '}linear in the parameters); valid solvers: {', '.join(valid)}")


def default_solver(loss, *, l2: float, linear: bool = True) -> str:
    """The first solver (in :data:`SOLVERS` order) that fits the loss."""
    return next(name for name in SOLVERS if fits(name, loss, l2=l2, linear=linear))
