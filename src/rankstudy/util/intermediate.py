"""A training loop's validation score while it trains, for tuning's pruner: an iterative ranker
calls :func:`report` with its step (a boosting round, an epoch, a pass) and its validation
score (higher is better) each time it has one; outside tuning nothing listens and it costs a
lookup. Inside a trial (:func:`listening`) the listener may stop the fit by raising
:class:`Pruned`, which the ranker lets through. Ambient, like logging, so the fit signature of
every ranker stays ``fit(train, vali)``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_listener: ContextVar[Callable[[int, float], None] | None] = ContextVar("intermediate_listener", default=None)


class Pruned(Exception):
    """The tuning pruner stopped this fit at ``step``: its curve was below the other trials'."""

    def __init__(self, step: int) -> None:
        super().__init__(f"pruned at step {step}")
        self.step = step


def listening() -> bool:
    """Whether anybody listens (a ranker may then compute a score it would not need otherwise)."""
    return _listener.get() is not None


def report(step: int, value: float) -> None:
    """The validation score at ``step``; raises Pruned when the listener says stop."""
    listener = _listener.get()
    if listener is not None:
        listener(int(step), float(value))


@contextmanager
def listened(listener: Callable[[int, float], None]) -> Iterator[None]:
    """``listener(step, value)`` hears every :func:`report` made inside the block."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)
