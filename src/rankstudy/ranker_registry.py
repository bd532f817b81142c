"""Every ranker kind by name, across the modules that define them, for configs and saved models.

A new kind is one Ranker subclass in its own module plus one entry here.
"""

from __future__ import annotations

import os

from rankstudy import rankers
from rankstudy.rankers import Ranker
from rankstudy.separate import SeparateRanker

RANKERS: dict[str, type[Ranker]] = {**rankers.RANKERS, "separate": SeparateRanker}


def ranker_class(kind: str) -> type[Ranker]:
    try:
        return RANKERS[kind]
    except (KeyError, TypeError):
        raise ValueError(f"unknown ranker kind {kind!r}; valid kinds: {', '.join(sorted(RANKERS))}") from None


def make_ranker(kind: str, params: dict | None = None) -> Ranker:
    """Build a ranker from plain data (e.g. a config entry), rejecting unknown parameters."""
    klass = ranker_class(kind)
    params = dict(params or {})
    valid = klass.param_names()
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(map(repr, unknown))} for ranker {kind!r}; "
                         f"valid parameters: {', '.join(valid)}")
    return klass(**params)


def load_ranker(path: str | os.PathLike) -> Ranker:
    return Ranker.load(path)
