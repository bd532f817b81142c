"""The hyper-parameters model selection chose: one row per (system, fold) with every grid
parameter's chosen value, what training itself settled (LambdaMART's early-stopped number of
trees, the restart kept), the chosen candidate's validation score and whether the model learned."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from rankstudy.reporting.tables import markdown_escape
from rankstudy.util import atomic


def chosen_frame(summaries: Mapping) -> pd.DataFrame:
    """From the method summaries (``MethodSummary.chosen``, by system, in table order)."""
    rows = []
    for system, summary in summaries.items():
        for fold, chosen in sorted(summary.chosen.items(), key=lambda kv: int(kv[0])):
            verdict = summary.learned.get(str(fold), summary.learned.get(fold, {}))
            rows.append({"system": system, "fold": int(fold), **chosen, "learned": verdict.get("learned")})
    frame = pd.DataFrame(rows)
    # a setting given as integers stays one where another system has none (NaN made it 22.0)
    for column in frame.columns:
        given = [v for v in frame[column] if v is not None and not (isinstance(v, float) and v != v)]
        if given and all(isinstance(v, int) and not isinstance(v, bool) for v in given):
            frame[column] = frame[column].astype("Int64")
    first = ["system", "fold"]
    last = [c for c in ("selection_score", "learned") if c in frame.columns]
    return frame[first + sorted(c for c in frame.columns if c not in first + last) + last]


def _cell(value) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def write_chosen(frame: pd.DataFrame, out_prefix: Path, caption: str) -> list[Path]:
    """``out_prefix.params.csv`` and ``.params.md``."""
    out_prefix = Path(out_prefix)
    shown = frame.astype(object).map(_cell)
    shown["system"] = [markdown_escape(s) for s in frame["system"]]
    # cells are text already: tabulate would read "22" back as a number and print it as 22.0
    markdown = f"{markdown_escape(caption)}\n\n{shown.to_markdown(index=False, disable_numparse=True)}\n"
    return [atomic.write_csv(frame, out_prefix.with_name(out_prefix.name + ".params.csv")),
            atomic.write_text(out_prefix.with_name(out_prefix.name + ".params.md"), markdown)]
