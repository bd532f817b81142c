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

``paper.convention`` (a name of :data:`rankstudy.evaluation.conventions.NAMED`, e.g. ``letor3``)
computes the table's metrics under that evaluation convention from the written test scores
(:func:`rescore`, no retraining), as the paper's own evaluation tool would; without it the table
shows the study's ``evaluation.metrics`` values.

Two layouts (``paper.layout``):

``cells`` (default)
    The paper's rows x columns, each cell with our number beside the published one, for one
    published data set (``paper.dataset``). Files: ``{prefix}.paper.{md,html}`` (the grid) and
    ``{prefix}.paper.csv`` (one row per cell: row, column, system, metric, ours, ours_std,
    published, published_dataset).

``datasets``
    For papers that report every method on many data sets (Dubey et al.'s Figure 3: a sub-table
    per metric, a column per LETOR data set plus a microaverage). ``paper.dataset`` is not used.
    For every paper column (e.g. MAP) one sub-table: the paper rows in config order; first
    column "ours ({our data set}, mean ± std over folds)" from the same ``system``/``metric``
    templates; then one column per published data set, in the order the reference CSV first
    names them. A published data set is named by its ``dataset`` entry up to the first " ("
    (``TD2004 (LETOR 3.0, cleaned, binary labels)`` and ``TD2004 (quoted from ..., uncleaned)``
    are both column ``TD2004``; the full entries are listed under the tables). A row whose
    system we did not run (a method the paper only quotes) shows "–". If no row of a sub-table
    has our result, that is a configuration error and is raised. The best three cells of every
    column are marked " ¹", " ²", " ³", the way the paper shades them. Higher is better, and
    ties share a rank (competition ranking: a cell's rank is 1 + the number of strictly better
    cells). Under each sub-table, Kendall's tau (``scipy.stats.kendalltau``, tau-b) between
    our column and each published column, over the n rows that both have.

    ``{prefix}.paper.csv`` is long-form, and its ``kind`` column tells its two kinds of rows
    apart:

    - ``kind=cell``: one row per (paper row, paper column, source). ``source`` is ``ours`` or a
      published data set's short name. ``value`` is our mean over folds or the published number
      (empty when missing). ``std`` is our std over folds. ``rank`` is the competition rank in
      the column (empty when missing). ``system`` and ``metric`` are ours, or the published
      metric. ``dataset`` is our data set, or the full published entry.
    - ``kind=kendall_tau``: one row per (paper column, published source). ``value`` is tau,
      empty when it is undefined (n < 2 or a constant column). ``n`` is the number of rows that
      both columns have.

    When our data set is one of the paper's (its short name is a published source, e.g. ours on
    OHSUMED beside Dubey et al.'s OHSUMED column), that column is the comparison: it follows ours,
    then a "difference" column (ours - paper); the best-three marks and Kendall's tau are ours
    and that column's only; the other data sets follow as context, unmarked. In the CSV the
    matching source's rows have ``matching`` True and ours have ``diff``.
"""

from __future__ import annotations

import html
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.evaluation import conventions
from rankstudy.reporting.marks import NOT_LEARNED_MARK
from rankstudy.reporting.paper_cells import cell_records, paper_systems  # noqa: F401 - part of this module's interface
from rankstudy.util import atomic


def not_learned_note(not_learned: dict) -> str:
    """The sentence under a table that has marked cells, or ''."""
    if not not_learned:
        return ""
    return (f" {NOT_LEARNED_MARK}: our model did not learn in fold(s) of "
            + "; ".join(f"{system} ({', '.join(map(str, sorted(folds)))})" for system, folds in not_learned.items())
            + " (training objective not clearly below its start, or no better than a random ranking; "
              "see the fold's summary.json).")


def load_published(path: str | Path, table: int, dataset: str | None = None) -> pd.DataFrame:
    """The published cells of one table; a table reported on several data sets (one column
    block each, like Chakrabarti et al.'s Figure 9) is narrowed to the ``dataset`` named
    (the start of its ``dataset`` entry, e.g. ``OHSUMED``)."""
    published = pd.read_csv(path, dtype={"row": str, "column": str})
    published = published[published["table"].astype(str) == str(table)]  # a number or a name
    if dataset is not None:
        chosen = published[published["dataset"].str.startswith(dataset)]
        if chosen.empty:
            raise ValueError(f"{path}: table {table} has no numbers for data set {dataset!r}; it has "
                             f"{', '.join(sorted(published['dataset'].unique()))}")
        return chosen
    return published


def cells(spec: dict) -> pd.DataFrame:
    """One row per paper cell: its row and column labels, our system and our metric."""
    return pd.DataFrame(cell_records(spec))


def rescore(spec: dict, fold_scores: dict, convention: str) -> pd.DataFrame:
    """The per-query frame :func:`fill` and :func:`fill_datasets` take (system, fold, qid, one
    column per metric of the table's cells), computed under ``convention`` from the written test
    scores: ``fold_scores`` maps each system to {fold: scores} with ``scores``, ``labels``,
    ``offsets`` and ``qids`` (a :class:`rankstudy.reporting.scorecard.FoldScores`)."""
    names = [m for m in dict.fromkeys(cells(spec)["metric"]) if m != "n_features"]
    frames = [pd.DataFrame({"system": system, "fold": fold, "qid": f.qids,
                            **{m: conventions.per_query(f.scores, f.labels, f.offsets, m, convention) for m in names}})
              for system, by_fold in fold_scores.items() for fold, f in by_fold.items()]
    return pd.concat(frames, ignore_index=True)


def fill(spec: dict, per_query: pd.DataFrame, n_features: dict[str, float],
         published: pd.DataFrame, not_learned: dict | None = None) -> pd.DataFrame:
    """Our mean over folds (of per-fold means) and std for every cell, beside the paper's value;
    ``learned`` is False for cells of a system in ``not_learned``; ``run`` is False for cells of
    a system this run did not train (a subset of the study's methods): they show "not run"."""
    table = cells(spec)
    table["learned"] = ~table["system"].isin(list(not_learned or {}))
    fold_means = per_query.groupby(["system", "fold"]).mean(numeric_only=True)
    ran = set(fold_means.index.get_level_values(0))
    table["run"] = [m == "n_features" or s in ran for s, m in zip(table["system"], table["metric"])]
    ours, spread = [], []
    for system, metric in zip(table["system"], table["metric"]):
        if metric == "n_features":
            featureset = system[system.index("[") + 1:-1]
            ours.append(n_features.get(featureset, np.nan)), spread.append(np.nan)
            continue
        if system not in ran:
            ours.append(np.nan), spread.append(np.nan)
            continue
        if metric not in fold_means.columns:
            raise ValueError(f"paper table: no results for system {system!r} and metric {metric!r}")
        values = fold_means.loc[system, metric].to_numpy(dtype=float)
        ours.append(np.nanmean(values)), spread.append(np.nanstd(values, ddof=1) if len(values) > 1 else np.nan)
    table["ours"], table["ours_std"] = ours, spread
    paper = published.set_index(["row", "column"])
    keys = list(zip(table["row"], table["column"]))
    table["published"] = [paper["value"].get(k, np.nan) for k in keys]
    table["published_dataset"] = [paper["dataset"].get(k, "") for k in keys]
    return table


NOT_RUN = "not run"


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
        grid[f"{column} (ours)"] = [(_cell(c["ours"], c["ours_std"], c["metric"]) if bool(c.get("run", True))
                                     else NOT_RUN)
                                    + ("" if bool(c.get("learned", True)) else f" {NOT_LEARNED_MARK}") for c in cell]
        grid[f"{column} (paper)"] = [_published_cell(c["published"], c["metric"]) for c in cell]
    return grid


def write(table: pd.DataFrame, out_prefix: Path, caption: str, not_learned: dict | None = None) -> list[Path]:
    grid = layout(table)
    datasets = sorted({d for d in table["published_dataset"] if d})
    skipped = sorted(set(table.loc[~table["run"], "system"])) if "run" in table else []
    note = ((("Paper numbers measured on: " + "; ".join(datasets) + ".") if datasets else
             "The paper reports no number for these cells.") + not_learned_note(not_learned)
            + (f" {NOT_RUN}: {', '.join(skipped)} (not among this run's methods, run_methods)." if skipped else ""))
    written = [atomic.write_csv(table, out_prefix.with_name(out_prefix.name + ".paper.csv"))]
    # labels such as 2^(r_i-1)/2^(|L|-1) hold pipes, which would split a Markdown cell
    md = grid.rename(index=lambda v: v.replace("|", "\\|"), columns=lambda v: v.replace("|", "\\|"))
    written.append(atomic.write_text(out_prefix.with_name(out_prefix.name + ".paper.md"),
                                     f"{caption}\n\n{md.to_markdown()}\n\n{note}\n"))
    written.append(atomic.write_text(out_prefix.with_name(out_prefix.name + ".paper.html"),
                                     f"<p>{caption}</p>\n{grid.to_html(escape=True)}\n<p>{note}</p>\n"))
    return written


# --- the "datasets" layout ----------------------------------------------------------------------

LAYOUTS = ("cells", "datasets")
OURS = "ours"
MARKS = {1: " ¹", 2: " ²", 3: " ³"}
CSV_COLUMNS = ["kind", "row", "column", "source", "value", "std", "rank", "n", "system", "metric", "dataset",
               "learned", "matching", "diff"]


def short_dataset(name: str) -> str:
    """A published data set's short name: its ``dataset`` entry up to the first " (", e.g.
    ``TD2004`` for ``TD2004 (LETOR 3.0, cleaned, binary labels)``."""
    return str(name).split(" (")[0].strip()


def _fold_stats(fold_means: pd.DataFrame, system: str, metric: str) -> tuple[float, float]:
    """Our mean over folds (of per-fold means) and its std; NaN when we have no result."""
    if system not in fold_means.index.get_level_values(0) or metric not in fold_means.columns:
        return np.nan, np.nan
    values = fold_means.loc[system, metric].to_numpy(dtype=float)
    values = values[~np.isnan(values)]
    if not len(values):
        return np.nan, np.nan
    return float(values.mean()), (float(values.std(ddof=1)) if len(values) > 1 else np.nan)


def competition_rank(values) -> np.ndarray:
    """1 + the number of strictly larger values (ties share a rank); NaN stays NaN."""
    values = np.asarray(values, dtype=float)
    present = values[~np.isnan(values)]
    return np.array([np.nan if np.isnan(v) else 1.0 + float(np.sum(present > v)) for v in values])


def fill_datasets(spec: dict, per_query: pd.DataFrame, published: pd.DataFrame, our_dataset: str,
                  not_learned: dict | None = None) -> pd.DataFrame:
    """The ``kind=cell`` rows of the datasets layout (see the module docstring), in display
    order: paper column, paper row, source (ours first, then the published data sets)."""
    table = cells(spec)
    if (table["metric"] == "n_features").any():
        raise ValueError("paper table: the datasets layout takes no n_features metric")
    fold_means = per_query.groupby(["system", "fold"]).mean(numeric_only=True)
    stats_ = {(r, c): _fold_stats(fold_means, s, m)
              for r, c, s, m in zip(table["row"], table["column"], table["system"], table["metric"])}
    for column, part in table.groupby("column", sort=False):
        if all(np.isnan(stats_[(r, column)][0]) for r in part["row"]):
            have = sorted(fold_means.index.get_level_values(0).unique())
            raise ValueError(
                f"paper table: none of the rows of column {column!r} has results of ours; looked for "
                + ", ".join(f"{s!r} / {m!r}" for s, m in zip(part["system"], part["metric"]))
                + f"; our results have systems {', '.join(map(repr, have))} and metrics "
                + ", ".join(map(repr, fold_means.columns)))

    published = published.assign(source=[short_dataset(d) for d in published["dataset"]])
    duplicated = published.duplicated(["row", "column", "source"], keep=False)
    if duplicated.any():
        raise ValueError("paper table: more than one published number for (row, column, data set) "
                         + ", ".join(map(str, published.loc[duplicated, ["row", "column", "source"]]
                                         .drop_duplicates().itertuples(index=False, name=None))))
    sources = list(dict.fromkeys(published["source"]))
    by_key = published.set_index(["row", "column", "source"])

    out = []
    for column in dict.fromkeys(table["column"]):
        part = table[table["column"] == column]
        for row, system, metric in zip(part["row"], part["system"], part["metric"]):
            mean, std = stats_[(row, column)]
            out.append({"kind": "cell", "row": row, "column": column, "source": OURS, "value": mean,
                        "std": std, "system": system, "metric": metric, "dataset": our_dataset,
                        "learned": system not in (not_learned or {})})
            for source in sources:
                key = (row, column, source)
                found = key in by_key.index
                out.append({"kind": "cell", "row": row, "column": column, "source": source,
                            "value": float(by_key.loc[key, "value"]) if found else np.nan, "std": np.nan,
                            "system": "", "metric": str(by_key.loc[key, "metric"]) if found else "",
                            "dataset": str(by_key.loc[key, "dataset"]) if found else "", "learned": pd.NA})
    frame = pd.DataFrame(out)
    matching = our_dataset if our_dataset in sources else None
    frame["matching"] = frame["source"] == matching
    frame["rank"] = np.nan
    for (_, source), idx in frame.groupby(["column", "source"], sort=False).groups.items():
        if matching is None or source in (OURS, matching):  # the other data sets are context, unmarked
            frame.loc[idx, "rank"] = competition_rank(frame.loc[idx, "value"])
    frame["rank"] = frame["rank"].astype("Int64")
    frame["n"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    frame["diff"] = np.nan
    if matching is not None:
        theirs = frame[frame["matching"]].set_index(["row", "column"])["value"]
        ours = frame["source"] == OURS
        frame.loc[ours, "diff"] = [v - theirs.get((r, c), np.nan) for v, r, c in
                                   zip(frame.loc[ours, "value"], frame.loc[ours, "row"], frame.loc[ours, "column"])]
    return frame[CSV_COLUMNS]


def rank_agreement(frame: pd.DataFrame) -> pd.DataFrame:
    """The ``kind=kendall_tau`` rows: Kendall's tau between our column and each published
    column of every sub-table, over the rows both have (``value`` NaN when undefined)."""
    from scipy.stats import kendalltau  # here: scipy.stats is 0.4 s of imports the config check does not need

    cells_ = frame[frame["kind"] == "cell"]
    matched = "matching" in cells_ and bool(cells_["matching"].fillna(False).astype(bool).any())
    out = []
    for column in dict.fromkeys(cells_["column"]):
        part = cells_[cells_["column"] == column]
        ours = part[part["source"] == OURS].set_index("row")["value"]
        # with our data set among the paper's, only that column is compared
        others = part[part["matching"].fillna(False).astype(bool)] if matched else part[part["source"] != OURS]
        for source in dict.fromkeys(others["source"]):
            theirs = part[part["source"] == source].set_index("row")["value"].reindex(ours.index)
            both = ours.notna() & theirs.notna()
            tau = np.nan
            if both.sum() >= 2:
                with warnings.catch_warnings():  # a constant column: tau is undefined (NaN)
                    warnings.simplefilter("ignore")
                    tau = float(kendalltau(ours[both].to_numpy(), theirs[both].to_numpy()).statistic)
            out.append({"kind": "kendall_tau", "row": "", "column": column, "source": source, "value": tau,
                        "std": np.nan, "rank": pd.NA, "n": int(both.sum()), "system": "", "metric": "",
                        "dataset": "", "learned": pd.NA, "matching": matched, "diff": np.nan})
    return pd.DataFrame(out, columns=CSV_COLUMNS).astype({"rank": "Int64", "n": "Int64"})


def _marked(text: str, rank) -> str:
    return text if pd.isna(rank) else text + MARKS.get(int(rank), "")


def layout_datasets(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Paper column -> its sub-table: paper rows x (ours, published data sets), as text."""
    cells_ = frame[frame["kind"] == "cell"]
    grids = {}
    for column in dict.fromkeys(cells_["column"]):
        part = cells_[cells_["column"] == column]
        rows = list(dict.fromkeys(part["row"]))
        grid = pd.DataFrame(index=pd.Index(rows, name=""))
        matching = list(dict.fromkeys(part.loc[part["matching"].fillna(False).astype(bool), "source"]))
        # ours, then the paper's column on our data set and the difference, then the context
        sources = [OURS, *matching, *[s for s in dict.fromkeys(part["source"]) if s not in (OURS, *matching)]]
        for source in sources:
            sub = part[part["source"] == source].set_index("row").loc[rows]
            if source == OURS:
                header = f"ours ({sub['dataset'].iloc[0]}, mean ± std over folds)"
                text = [_cell(v, s, "") + ("" if pd.isna(learned) or learned else f" {NOT_LEARNED_MARK}")
                        for v, s, learned in zip(sub["value"], sub["std"], sub["learned"])]
            elif source in matching:
                header = f"paper ({source})"
                text = [_published_cell(v, "") for v in sub["value"]]
            else:
                header = f"{source} (context)" if matching else source
                text = [_published_cell(v, "") for v in sub["value"]]
            grid[header] = [_marked(t, r) for t, r in zip(text, sub["rank"])]
            if source in matching:
                diffs = part[part["source"] == OURS].set_index("row").loc[rows, "diff"]
                grid["difference"] = ["–" if pd.isna(d) else f"{d:+.4f}" for d in diffs]
        grids[column] = grid
    return grids


def agreement_line(agreement: pd.DataFrame, column: str) -> str:
    part = agreement[agreement["column"] == column]
    items = [f"{source} {'–' if np.isnan(tau) else f'{tau:.2f}'} (n={int(n)})"
             for source, tau, n in zip(part["source"], part["value"], part["n"])]
    return "Kendall tau of our method order vs the paper's: " + (", ".join(items) if items else "–")


def write_datasets(frame: pd.DataFrame, out_prefix: Path, caption: str, not_learned: dict | None = None) -> list[Path]:
    """The datasets layout's ``.paper.{csv,md,html}`` (formats in the module docstring)."""
    agreement = rank_agreement(frame)
    grids = layout_datasets(frame)
    published = frame[(frame["kind"] == "cell") & (frame["source"] != OURS) & (frame["dataset"] != "")]
    datasets = list(dict.fromkeys(published["dataset"]))
    matched = bool(frame["matching"].fillna(False).astype(bool).any())
    note = (("Paper numbers measured on: " + "; ".join(datasets) + ". ") if datasets else
            "The paper reports no number for these cells. ") + \
        "¹ ² ³: the best three cells of each column (higher is better; ties share a rank)." + \
        (" Our data set is one of the paper's: ours is compared with that column (difference = ours - paper; "
         "marks and Kendall's tau for those two only); the columns marked (context) are the paper's other "
         "data sets, not comparable with ours." if matched else "") + \
        not_learned_note(not_learned)
    long = pd.concat([frame, agreement], ignore_index=True) if len(agreement) else frame
    written = [atomic.write_csv(long[CSV_COLUMNS], out_prefix.with_name(out_prefix.name + ".paper.csv"))]
    md, page = [caption, ""], [f"<p>{html.escape(caption)}</p>"]
    for column, grid in grids.items():
        line = agreement_line(agreement, column)
        # labels such as 2^(r_i-1)/2^(|L|-1) hold pipes, which would split a Markdown cell
        escaped = grid.rename(index=lambda v: v.replace("|", "\\|"), columns=lambda v: v.replace("|", "\\|"))
        md += [f"### {column}", "", escaped.to_markdown(), "", line, ""]
        page += [f"<h3>{html.escape(column)}</h3>", grid.to_html(escape=True), f"<p>{html.escape(line)}</p>"]
    md.append(note)
    page.append(f"<p>{html.escape(note)}</p>")
    written.append(atomic.write_text(out_prefix.with_name(out_prefix.name + ".paper.md"), "\n".join(md) + "\n"))
    written.append(atomic.write_text(out_prefix.with_name(out_prefix.name + ".paper.html"), "\n".join(page) + "\n"))
    return written
