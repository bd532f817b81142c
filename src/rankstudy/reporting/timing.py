"""How long each system took to train: mean seconds over folds of the train job (wall, and the CPU
its threads used: a GBDT job on 4 threads spends more CPU than wall), of the
chosen grid candidate's fit, and of that fit's time in loss-augmented inference (argmax) and
in the working-set QP when the solver records them (Chakrabarti et al., Figures 8 and 10), and a
tuned system's CPU-seconds of tuning trials and how many ran."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from rankstudy.reporting.tables import markdown_escape
from rankstudy.util import atomic

COLUMNS = {"train_job_seconds": "train job (s)", "train_job_cpu_seconds": "train job (CPU-s)",
           "fit_seconds": "chosen fit (s)",
           "argmax_seconds": "of which argmax (s)", "qp_seconds": "of which QP (s)",
           "tuning_cpu_seconds": "tuning (CPU-s)", "tuning_trials": "tuning trials"}


def timing_frame(timings: Mapping[str, Mapping[str, float | None]]) -> pd.DataFrame:
    """One row per system (in the given order), the :data:`COLUMNS` as columns; NaN where a
    solver does not record a part."""
    frame = pd.DataFrame.from_dict({s: dict(t) for s, t in timings.items()}, orient="index")
    frame = frame.reindex(columns=list(COLUMNS)).astype(float)
    if frame["tuning_cpu_seconds"].isna().all():  # a study that tunes nothing keeps its columns
        frame = frame.drop(columns=["tuning_cpu_seconds", "tuning_trials"])
    frame.index.name = "system"
    return frame


def write_timing(frame: pd.DataFrame, out_prefix: Path, caption: str) -> list[Path]:
    """``out_prefix.timing.csv`` (the numbers) and ``.timing.md`` (caption and table, without the
    columns no system has a number for)."""
    out_prefix = Path(out_prefix)
    # a solver's parts that no system recorded (argmax, QP: the cutting plane's) are left out
    shown = frame.dropna(axis=1, how="all").rename(columns=COLUMNS)
    shown.index = [markdown_escape(s) for s in shown.index]
    shown.index.name = "system"
    markdown = f"{markdown_escape(caption)}\n\n{shown.to_markdown(floatfmt='.3f')}\n".replace("nan", "–")
    return [atomic.write_csv(frame.reset_index(), out_prefix.with_name(out_prefix.name + ".timing.csv")),
            atomic.write_text(out_prefix.with_name(out_prefix.name + ".timing.md"), markdown)]
