"""A seed paper's table in its own layout, with our number beside the published one.

A study config maps the paper's rows and columns to our systems and metrics by templates:

    paper:
      reference: config/reference/tran2011-published.csv
      table: 8
      rows: {"1": unit, "r_i": r}            # paper row label -> token
      columns: {WPL: wpl, RPL: rpl}          # paper column label -> token
      system: "{column}_{row} [first]"        # our system (method [featureset]) of a cell
      metric: err                             # our metric of a cell; may use {row}/{column}
      dataset: OHSUMED                        # optional: the paper's data set, when it has several
      label: Figure 9                         # optional: how the paper names it (default "Table N")

`n_features` as a metric is the size of the feature set (for "No. feats" columns).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.util import atomic


def load_published(path: str | Path, table: int, dataset: str | None = None) -> pd.DataFrame:
    """The published cells of one table; a table reported on several data sets (one column
    block each, like Chakrabarti et al.'s Figure 9) is narrowed to the ``dataset`` named
    (the start of its ``dataset`` entry, e.g. ``OHSUMED``)."""
    published = pd.read_csv(path, dtype={"row": str, "column": str})
    published = published[published["table"] == int(table)]
    if dataset is not None:
        chosen = published[published["dataset"].str.startswith(dataset)]
        if chosen.empty:
            raise ValueError(f"{path}: table {table} has no numbers for data set {dataset!r}; it has "
                             f"{', '.join(sorted(published['dataset'].unique()))}")
        return chosen
    return published


def cells(spec: dict) -> pd.DataFrame:
    """One row per paper cell: its row and column labels, our system and our metric."""
    out = []
    for row, row_token in spec["rows"].items():
        for column, column_token in spec["columns"].items():
            tokens = {"row": row_token, "column": column_token}
            out.append({"row": str(row), "column": str(column),
                        "system": spec["system"].format(**tokens),
                        "metric": spec.get("metric", "{column}").format(**tokens)})
    return pd.DataFrame(out)


def fill(spec: dict, per_query: pd.DataFrame, n_features: dict[str, float],
         published: pd.DataFrame) -> pd.DataFrame:
    """Our mean over folds (of per-fold means) and std for every cell, beside the paper's value."""
    table = cells(spec)
    fold_means = per_query.groupby(["system", "fold"]).mean(numeric_only=True)
    ours, spread = [], []
    for system, metric in zip(table["system"], table["metric"]):
        if metric == "n_features":
            featureset = system[system.index("[") + 1:-1]
            ours.append(n_features.get(featureset, np.nan)), spread.append(np.nan)
            continue
        if system not in fold_means.index.get_level_values(0) or metric not in fold_means.columns:
            raise ValueError(f"paper table: no results for system {system!r} and metric {metric!r}")
        values = fold_means.loc[system, metric].to_numpy(dtype=float)
        ours.append(np.nanmean(values)), spread.append(np.nanstd(values, ddof=1) if len(values) > 1 else np.nan)
    table["ours"], table["ours_std"] = ours, spread
    paper = published.set_index(["row", "column"])
    keys = list(zip(table["row"], table["column"]))
    table["published"] = [paper["value"].get(k, np.nan) for k in keys]
    table["published_dataset"] = [paper["dataset"].get(k, "") for k in keys]
    return table


def _cell(ours: float, std: float, metric: str) -> str:
    if np.isnan(ours):
        return "–"
    if metric == "n_features":
        return f"{ours:,.0f}"
    return f"{ours:.4f}" if np.isnan(std) else f"{ours:.4f} ± {std:.4f}"


def _published_cell(value: float, metric: str) -> str:
    if np.isnan(value):
        return "–"
    return f"{value:,.0f}" if metric == "n_features" else f"{value:.4f}"


def layout(table: pd.DataFrame) -> pd.DataFrame:
    """Paper rows x (column, ours | paper), in the config's order."""
    rows = list(dict.fromkeys(table["row"]))
    columns = list(dict.fromkeys(table["column"]))
    grid = pd.DataFrame(index=pd.Index(rows, name=""))
    by_key = table.set_index(["row", "column"])
    for column in columns:
        cell = [by_key.loc[(r, column)] for r in rows]
        grid[f"{column} (ours)"] = [_cell(c["ours"], c["ours_std"], c["metric"]) for c in cell]
        grid[f"{column} (paper)"] = [_published_cell(c["published"], c["metric"]) for c in cell]
    return grid


def write(table: pd.DataFrame, out_prefix: Path, caption: str) -> list[Path]:
    grid = layout(table)
    datasets = sorted({d for d in table["published_dataset"] if d})
    note = ("Paper numbers measured on: " + "; ".join(datasets) + ".") if datasets else \
        "The paper reports no number for these cells."
    written = [atomic.write_csv(table, out_prefix.with_name(out_prefix.name + ".paper.csv"))]
    # labels such as 2^(r_i-1)/2^(|L|-1) hold pipes, which would split a Markdown cell
    md = grid.rename(index=lambda v: v.replace("|", "\\|"), columns=lambda v: v.replace("|", "\\|"))
    written.append(atomic.write_text(out_prefix.with_name(out_prefix.name + ".paper.md"),
                                     f"{caption}\n\n{md.to_markdown()}\n\n{note}\n"))
    written.append(atomic.write_text(out_prefix.with_name(out_prefix.name + ".paper.html"),
                                     f"<p>{caption}</p>\n{grid.to_html(escape=True)}\n<p>{note}</p>\n"))
    return written
