"""Every loss by name, across the loss families (one module each), for configs and rankers.

A new loss is one function in its family's module plus one entry in that module's dict.
"""

from __future__ import annotations

from rankstudy.elementwise import ELEMENTWISE_LOSSES
from rankstudy.losses import LOSSES as BASELINE_LOSSES
from rankstudy.losses import LossFn
from rankstudy.pairwise import PAIRWISE_LOSSES
from rankstudy.smoothed import SMOOTHED_LOSSES

LOSSES: dict[str, LossFn] = {**BASELINE_LOSSES, **ELEMENTWISE_LOSSES, **PAIRWISE_LOSSES, **SMOOTHED_LOSSES}


def get_loss(name: str) -> LossFn:
    try:
        return LOSSES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown loss {name!r}; valid losses: {', '.join(sorted(LOSSES))}") from None
