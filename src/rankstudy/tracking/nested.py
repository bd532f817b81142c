"""The nested runs of a fold run, one per row of a table of the fold's candidates: the grid's
``selection.csv`` today, a tuning job's ``trials.csv`` the same way. MLflow-free (the aggregate
job, which plans the runs, imports no MLflow); :func:`rankstudy.tracking.runs.log_fold_run`
logs them under their fold run."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping

# what a candidate's row holds beside its param.* and vali.* columns
SECONDS = ("fit_seconds", "cpu_seconds")


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if not math.isinf(number) else None  # MLflow stores NaN, not infinity


def nested_runs(rows: Iterable[Mapping], level: str = "candidate", number: str = "candidate") -> list[dict]:
    """One nested run per row (a candidate or a trial): its ``param.*`` values as params, its
    ``vali.*`` scores and seconds as metrics, its ``state`` (complete, diverged, pruned, ...) and
    whether it was ``selected`` as tags, a tuning trial's validation ``curve`` as the history of
    ``vali.curve``; named ``<level><row[number]>``."""
    runs = []
    for row in rows:
        params = {k.removeprefix("param."): v for k, v in row.items() if k.startswith("param.")}
        metrics = {k: _number(row[k]) for k in row if k.startswith("vali.") or k in SECONDS}
        tags = {"state": str(row.get("state", "complete"))}
        if "selected" in row:
            tags["selected"] = str(row["selected"]).lower()
        if row.get("worker") is not None and row.get("worker") == row.get("worker"):  # a tuning trial's (NaN: none)
            tags["worker"] = str(int(row["worker"]))
        run = {"name": f"{level}{int(row[number])}", "level": level, "params": params,
               "metrics": {k: v for k, v in metrics.items() if v is not None}, "tags": tags}
        if isinstance(row.get("curve"), str) and row["curve"].strip():  # a tuning trial's [[step, score], ...]
            run["curve"] = [(int(step), v) for step, value in json.loads(row["curve"])
                            if (v := _number(value)) is not None]
        runs.append(run)
    return runs


__all__ = ["nested_runs"]
