"""Every solver by name (see :mod:`rankstudy.solvers.base`), built from one settings object, with
what it needs of a loss. A new solver is one class plus one entry here.

Which solver fits which loss (:func:`check_solver`), from the loss's entry in
:data:`rankstudy.losses.registry.LOSSES`:

* ``lbfgs``: a smooth loss (a gradient everywhere);
* ``cutting_plane``: a loss it can bound from below by planes (``convex`` in the scores, and
  scores linear in the parameters), every parameter penalised (no bias) and ``l2 > 0``;
* ``projected_sgd``: any loss with a (sub)gradient;
* ``adam``: any loss with a (sub)gradient, any scorer (minibatch Adam; what neural scorers use).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rankstudy.util.lazy import load
from rankstudy.util.names import lookup


@dataclass(frozen=True)
class SolverSettings:
    """The settings of every solver; each takes the ones it uses. Adam's own settings (declared in
    :data:`rankstudy.solvers.adam.PARAMETERS`, with their defaults) go by name in ``adam``."""

    max_iter: int = 200  # lbfgs, cutting_plane: iterations
    tol: float = 1e-6  # lbfgs
    epsilon: float = 1e-3  # cutting_plane: its tolerance
    epochs: int = 10  # projected_sgd
    step: float = 0.5
    decay: float = 2 ** -0.5
    l1_bound: float | None = None
    seed: int = 0
    adam: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class SolverEntry:
    """``path``: ``"module:Class"`` of the solver, imported when it is built (the cutting-plane
    solver's QP library alone costs a job 0.4 s); ``build`` makes it from the settings."""

    path: str
    build: Callable[[type, SolverSettings], object]
    needs_smooth: bool = False
    needs_convex_unbiased: bool = False

    @property
    def cls(self) -> type:
        return load(self.path)


SOLVERS: dict[str, SolverEntry] = {
    "lbfgs": SolverEntry("rankstudy.solvers.lbfgs:LBFGS", lambda cls, s: cls(max_iter=s.max_iter, tol=s.tol),
                         needs_smooth=True),
    "cutting_plane": SolverEntry("rankstudy.solvers.cutting_plane:CuttingPlane",
                                 lambda cls, s: cls(epsilon=s.epsilon, max_iter=s.max_iter),
                                 needs_convex_unbiased=True),
    "projected_sgd": SolverEntry("rankstudy.solvers.projected_sgd:ProjectedSGD",
                                 lambda cls, s: cls(step=s.step, decay=s.decay, epochs=s.epochs,
                                                    l1_bound=s.l1_bound, seed=s.seed)),
    "adam": SolverEntry("rankstudy.solvers.adam:Adam", lambda cls, s: cls(**{"seed": s.seed, **s.adam})),
}


def solver_class(name: str) -> type:
    return lookup(SOLVERS, name, "solver").cls


def make_solver(name: str, settings: SolverSettings):
    """The solver ``name`` with the settings it uses."""
    entry = lookup(SOLVERS, name, "solver")
    return entry.build(entry.cls, settings)


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
