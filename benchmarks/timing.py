"""Timing helpers shared by the benchmark scripts (run as `python benchmarks/bench_*.py`, so this
folder is on the import path): the best or median wall time of a call over repeats."""

from __future__ import annotations

import time

import numpy as np


def call_seconds(fn, repeats: int, warmup: bool = False) -> list[float]:
    """Wall seconds of ``repeats`` calls of ``fn``; ``warmup``: one untimed call first (numba
    compilation, first allocations, first-call imports)."""
    if warmup:
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def best_of(fn, repeats: int, warmup: bool = False) -> float:
    """The fastest of ``repeats`` calls: the least disturbed by a shared machine."""
    return min(call_seconds(fn, repeats, warmup))


def median_of(fn, repeats: int, warmup: bool = True) -> float:
    return float(np.median(call_seconds(fn, repeats, warmup)))
