"""The time and memory behind a fold run, kept out of its metric charts.

MLflow 3's run page charts every metric of a run: a metric named with a prefix (``usage/...``) in
a section of its own, the sections sorted by name and placed before "Model metrics", the charts of
a section sorted by name. The fifteen ``usage/<rule>.*`` figures of a fold's jobs were so the first
charts of its page, before its learning curves; no prefix sorts after "Model metrics". So a fold
run's usage is not a metric: each figure is a tag ``usage.<name>`` (shown on the run's overview,
and as a column of the runs table), and the artifact ``usage.json`` holds them as numbers with the
seconds of each training step (a solver's ``seconds``, ``argmax_seconds``, ``qp_seconds``), which
leave the curves. A fold run's metrics with a history are then its learning curves."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

TAG_PREFIX = "usage."
ARTIFACT = "usage.json"
# a step's seconds in a training history: "seconds", "argmax_seconds", "restart2_qp_seconds"
STEP_SECONDS = re.compile(r"(^|_)seconds$")


def split_history(history: Iterable[Mapping]) -> tuple[list[dict], list[dict]]:
    """``history`` (``{"step": k, name: value, ...}`` per step) as its curves and its steps' seconds,
    each entry keeping its step; a step with nothing left on one side is left out of it."""
    curves, seconds = [], []
    for entry in history:
        timed = {k: v for k, v in entry.items() if k != "step" and STEP_SECONDS.search(k)}
        rest = {k: v for k, v in entry.items() if k != "step" and k not in timed}
        if rest:
            curves.append({"step": entry["step"], **rest})
        if timed:
            seconds.append({"step": entry["step"], **timed})
    return curves, seconds


def usage_tags(usage: Mapping[str, float | None]) -> dict[str, str]:
    """``{"usage.<name>": value}`` for each figure of ``usage`` (``train.wall_s``, ``train_seconds``,
    ...); a figure not measured (None) is left out."""
    return {f"{TAG_PREFIX}{name}": repr(float(value)) for name, value in usage.items() if value is not None}


def usage_document(usage: Mapping[str, float | None], step_seconds: list[dict]) -> dict:
    """What ``usage.json`` holds: the figures as numbers, and each training step's seconds."""
    return {"usage": {k: None if v is None else float(v) for k, v in usage.items()}, "steps": step_seconds}
