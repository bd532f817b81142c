"""Every solver by name (see :mod:`rankstudy.solvers.base`). A new solver is one class plus
one entry here."""

from __future__ import annotations

from rankstudy.solvers.lbfgs import LBFGS

SOLVERS: dict[str, type] = {
    "lbfgs": LBFGS,
}


def solver_class(name: str) -> type:
    try:
        return SOLVERS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown solver {name!r}; valid solvers: {', '.join(SOLVERS)}") from None
