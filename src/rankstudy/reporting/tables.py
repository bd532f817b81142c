"""Comparison tables of systems against a baseline, and their CSV/Markdown/LaTeX/HTML files.

Input is the long per-query frame of TEST metrics of one data set: columns
``system``, ``fold``, ``qid`` and one float column per metric. NaN metric values
(queries dropped by the no-relevant-document policy) are excluded pairwise.

The table has one row per system (baseline first, then input order) and
two-level columns ``(metric, stat)`` with the stats in :data:`STATS`. Every
metric is taken as higher-is-better when marking the best system.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.util import atomic
from rankstudy.reporting.significance import holm, paired_ttest, randomization_tests

KEY_COLUMNS = ("system", "fold", "qid")
STATS = (
    "mean",  # mean over folds of the per-fold mean over queries
    "std",  # sample std (ddof=1) over folds of the per-fold means
    "n_folds",  # folds with at least one non-NaN value
    "n_pairs",  # queries matched with the baseline on (fold, qid), both non-NaN
    "p_ttest",  # raw paired t-test p vs baseline
    "p_rand",  # raw randomization-test p vs baseline
    "p_ttest_holm",  # Holm-adjusted across the non-baseline systems of this metric
    "p_rand_holm",
    "sig_ttest",  # p_ttest_holm < alpha
    "sig_rand",  # p_rand_holm < alpha
    "best",  # highest mean for this metric (ties all marked)
)
# Relative slack when comparing means for "best", so rounding noise does not break ties.
_BEST_TOLERANCE = 1e-12
# after a system whose chosen model did not learn in some fold (rankstudy.evaluation.learning)
NOT_LEARNED_MARK = "⚠"


# --------------------------------------------------------------------------- table


def check_per_query(per_query: pd.DataFrame, metrics: Sequence[str]) -> None:
    """Raise ValueError if the frame lacks a column or repeats a (system, fold, qid)."""
    missing = [c for c in (*KEY_COLUMNS, *metrics) if c not in per_query.columns]
    if missing:
        raise ValueError(f"per-query frame lacks columns {missing}; has {list(per_query.columns)}")
    duplicated = per_query.duplicated(list(KEY_COLUMNS))
    if duplicated.any():
        example = per_query.loc[duplicated, list(KEY_COLUMNS)].iloc[0].tolist()
        raise ValueError(f"per-query frame has repeated (system, fold, qid) rows, e.g. {example}")


def ordered_systems(per_query: pd.DataFrame, baseline: str) -> list[str]:
    """The baseline first, then the other systems in order of first appearance."""
    systems = list(pd.unique(per_query["system"]))
    if baseline not in systems:
        raise ValueError(f"baseline system {baseline!r} not found; systems are {systems}")
    return [baseline] + [s for s in systems if s != baseline]


def fold_mean_and_std(per_query: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per system: mean and sample std over folds of the per-fold mean (NaN queries skipped)."""
    fold_means = per_query.groupby(["system", "fold"], sort=False)[metric].mean()
    summary = fold_means.groupby(level="system", sort=False).agg(["mean", "std", "count"])
    return summary.rename(columns={"count": "n_folds"})


def by_query(per_query: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Wide frame of ``metric``: rows (fold, qid), one column per system, NaN where absent,
    so that any two systems are paired on the same queries."""
    return per_query.pivot(index=["fold", "qid"], columns="system", values=metric)


def best_mask(means: pd.Series) -> pd.Series:
    """True for the system(s) with the highest mean; NaN means are never best."""
    top = means.max()
    if np.isnan(top):
        return pd.Series(False, index=means.index)
    return means >= top - _BEST_TOLERANCE * max(1.0, abs(top))


def metric_comparison(
    per_query: pd.DataFrame,
    metric: str,
    systems: Sequence[str],
    *,
    n_resamples: int,
    alpha: float,
    seed: int,
) -> pd.DataFrame:
    """The :data:`STATS` of one metric, one row per system; ``systems[0]`` is the baseline."""
    baseline, others = systems[0], list(systems[1:])
    out = fold_mean_and_std(per_query, metric).reindex(systems)
    wide = by_query(per_query, metric)
    base_values = wide[baseline].to_numpy()
    n_pairs, p_ttest = [], []
    for system in others:  # a handful of systems; the tests themselves are vectorised
        values = wide[system].to_numpy()
        n_pairs.append(int(np.count_nonzero(np.isfinite(values) & np.isfinite(base_values))))
        p_ttest.append(paired_ttest(values, base_values))
    p_rand = list(randomization_tests(wide[others].to_numpy(), base_values, n_resamples=n_resamples, seed=seed))
    base_n = int(np.count_nonzero(np.isfinite(base_values)))
    out["n_pairs"] = [base_n] + n_pairs
    out["p_ttest"] = [np.nan] + p_ttest
    out["p_rand"] = [np.nan] + p_rand
    out["p_ttest_holm"] = np.concatenate([[np.nan], holm(p_ttest)])
    out["p_rand_holm"] = np.concatenate([[np.nan], holm(p_rand)])
    # NaN < alpha is False, so the baseline and untestable systems are never significant.
    out["sig_ttest"] = out["p_ttest_holm"] < alpha
    out["sig_rand"] = out["p_rand_holm"] < alpha
    out["best"] = best_mask(out["mean"])
    return out[list(STATS)]


def comparison_table(
    per_query: pd.DataFrame,
    metrics: Sequence[str],
    baseline: str,
    *,
    n_resamples: int = 10000,
    alpha: float = 0.05,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per system (baseline first), columns ``(metric, stat)`` for ``stat`` in STATS.

    Tests compare each system with the baseline over queries matched on (fold, qid);
    p-values are Holm-corrected across the non-baseline systems, per metric.
    ``table.attrs`` records baseline, alpha, n_resamples and metrics for the writers.
    """
    metrics = list(metrics)
    check_per_query(per_query, metrics)
    systems = ordered_systems(per_query, baseline)
    per_metric = {
        metric: metric_comparison(
            per_query, metric, systems, n_resamples=n_resamples, alpha=alpha, seed=seed
        )
        for metric in metrics
    }
    table = pd.concat(per_metric, axis=1, names=["metric", "stat"])
    table.index.name = "system"
    table.attrs.update(baseline=baseline, alpha=alpha, n_resamples=n_resamples, metrics=metrics)
    return table


# --------------------------------------------------------------------------- writing


def mean_std_text(mean: float, std: float) -> str:
    """``0.4523 ± 0.0121``; just the mean with one fold (std undefined); ``–`` if no value."""
    if np.isnan(mean):
        return "–"
    if np.isnan(std):
        return f"{mean:.4f}"
    return f"{mean:.4f} ± {std:.4f}"


def mark_not_learned(table: pd.DataFrame, not_learned: dict[str, dict[int, list[str]]]) -> pd.DataFrame:
    """Record the systems whose chosen model did not learn in some fold ({system: {fold:
    problems}}): the writers mark them and say why in the legend, the CSV has a column."""
    table.attrs["not_learned"] = {s: v for s, v in not_learned.items() if s in table.index}
    return table


def shown_system(table: pd.DataFrame, system: str) -> str:
    return f"{system} {NOT_LEARNED_MARK}" if system in table.attrs.get("not_learned", {}) else str(system)


def not_learned_text(table: pd.DataFrame) -> str:
    """The legend's sentence on systems that did not learn, or ''."""
    flagged = table.attrs.get("not_learned", {})
    if not flagged:
        return ""
    parts = [f"{system}: fold(s) {', '.join(map(str, sorted(folds)))} ({next(iter(folds.values()))[0]})"
             for system, folds in flagged.items()]
    return (f" {NOT_LEARNED_MARK}: the chosen model did not learn (its training objective did not fall "
            f"clearly below its start, or it was no better than a random ranking): " + "; ".join(parts) + ".")


def legend_text(table: pd.DataFrame, escape=str, pm: str = "±", t_mark: str = "*", r_mark: str = "†") -> str:
    """The legend of the marks; ``escape`` is applied to the prose only, not to the given marks."""
    alpha = table.attrs.get("alpha", 0.05)
    n_resamples = table.attrs.get("n_resamples", "?")
    baseline = table.attrs.get("baseline", table.index[0])
    return (
        escape("Mean ") + pm + escape(" std over folds of the per-fold test means. Bold: best per metric. ")
        + t_mark
        + escape(f": p < {alpha:g} vs baseline {baseline} (paired t-test, Holm-corrected across systems); ")
        + r_mark
        + escape(
            f": p < {alpha:g} vs baseline (paired sign-flip randomization test, {n_resamples} resamples, "
            "Holm-corrected)."
        )
        + escape(not_learned_text(table))
    )


def cell_fields(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per system: the ``mean ± std`` text, and the best / t-test / randomization flags."""
    part = table[metric]
    return pd.DataFrame(
        {
            "text": [mean_std_text(m, s) for m, s in zip(part["mean"], part["std"])],
            "best": part["best"].astype(bool),
            "sig_ttest": part["sig_ttest"].astype(bool),
            "sig_rand": part["sig_rand"].astype(bool),
        },
        index=table.index,
    )


def formatted_cells(table: pd.DataFrame, metrics: Sequence[str], fmt) -> pd.DataFrame:
    """String frame (systems x metrics) with ``fmt(text, best, sig_ttest, sig_rand)`` per cell."""
    columns = {}
    for metric in metrics:
        fields = cell_fields(table, metric)
        columns[metric] = [fmt(*row) for row in fields.itertuples(index=False)]
    return pd.DataFrame(columns, index=table.index)


def long_numbers(table: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """All numbers of the table in long form: one row per (metric, system)."""
    frames = []
    for metric in metrics:
        part = table[metric].reset_index()
        part.insert(0, "metric", metric)
        frames.append(part)
    long = pd.concat(frames, ignore_index=True)
    long["is_baseline"] = long["system"] == table.attrs.get("baseline", table.index[0])
    long["learned"] = ~long["system"].isin(list(table.attrs.get("not_learned", {})))
    return long


# Markdown ------------------------------------------------------------------


def markdown_escape(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")


def markdown_cell(text: str, best: bool, sig_ttest: bool, sig_rand: bool) -> str:
    body = f"**{text}**" if best else text
    return body + ("\\*" if sig_ttest else "") + ("†" if sig_rand else "")


def markdown_document(table: pd.DataFrame, metrics: Sequence[str], caption: str) -> str:
    cells = formatted_cells(table, metrics, markdown_cell)
    cells.index = [markdown_escape(shown_system(table, s)) for s in cells.index]
    cells.index.name = "system"
    cells.columns = [markdown_escape(m) for m in metrics]
    body = cells.to_markdown(colalign=("left",) + ("right",) * len(metrics))
    legend = legend_text(table, escape=markdown_escape, t_mark="\\*")
    return f"{markdown_escape(caption)}\n\n{body}\n\n{legend}\n"


# LaTeX ---------------------------------------------------------------------

# '[' and ']' are braced so a row starting with '[' is not read as the optional
# argument of the previous '\\'. '@' needs no escape in body text (it is special
# only in column specs and under \makeatletter), so it is left as is.
_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "[": "{[}",
    "]": "{]}",
    "±": r"$\pm$",
    "†": r"$^{\dagger}$",
    "–": "--",
    "<": r"$<$",  # text-mode < and > print as other glyphs in the OT1 encoding
    ">": r"$>$",
    NOT_LEARNED_MARK: r"(!)",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_ESCAPES.get(ch, ch) for ch in str(text))


def latex_cell(text: str, best: bool, sig_ttest: bool, sig_rand: bool) -> str:
    body = latex_escape(text)
    if best:
        body = rf"\textbf{{{body}}}"
    marks = ("*" if sig_ttest else "") + (r"\dagger" if sig_rand else "")
    return body + (f"$^{{{marks}}}$" if marks else "")


def latex_document(table: pd.DataFrame, metrics: Sequence[str], caption: str) -> str:
    """A ``table`` float holding a booktabs ``tabular`` (needs \\usepackage{booktabs})."""
    cells = formatted_cells(table, metrics, latex_cell)
    header = " & ".join(["System", *(latex_escape(m) for m in metrics)]) + r" \\"
    rows = [
        " & ".join([latex_escape(shown_system(table, system)), *cells.loc[system].tolist()]) + r" \\"
        for system in cells.index
    ]
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        r"\begin{tabular}{l" + "r" * len(metrics) + "}",
        r"\toprule",
        header,
        r"\midrule",
        rows[0],  # the baseline, set apart from the systems compared with it
        r"\midrule",
        *rows[1:],
        r"\bottomrule",
        r"\end{tabular}",
        r"\par\smallskip{\footnotesize "
        + legend_text(table, escape=latex_escape, pm=r"$\pm$", t_mark="$^{*}$", r_mark=r"$^{\dagger}$")
        + "}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


# HTML ----------------------------------------------------------------------


def html_cell(text: str, best: bool, sig_ttest: bool, sig_rand: bool) -> str:
    body = html.escape(text)
    if best:
        body = f"<b>{body}</b>"
    marks = ("*" if sig_ttest else "") + ("†" if sig_rand else "")
    return body + (f"<sup>{marks}</sup>" if marks else "")


def html_document(table: pd.DataFrame, metrics: Sequence[str], caption: str) -> str:
    cells = formatted_cells(table, metrics, html_cell)
    legend = legend_text(table, escape=html.escape, t_mark="<sup>*</sup>", r_mark="<sup>†</sup>")
    head = "".join(f"<th>{html.escape(m)}</th>" for m in ["system", *metrics])
    rows = "\n".join(
        "<tr><th>"
        + html.escape(shown_system(table, system))
        + "</th>"
        + "".join(f'<td style="text-align:right">{c}</td>' for c in cells.loc[system])
        + "</tr>"
        for system in cells.index
    )
    return (
        "<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\">"
        f"<title>{html.escape(caption)}</title></head>\n<body>\n"
        f"<table>\n<caption>{html.escape(caption)}</caption>\n"
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}\n</tbody>\n</table>\n"
        f"<p>{legend}</p>\n</body>\n</html>\n"
    )


def write_tables(table: pd.DataFrame, metrics: Sequence[str], out_prefix: Path, caption: str) -> list[Path]:
    """Write ``out_prefix`` + ``.csv`` / ``.md`` / ``.tex`` / ``.html``; return the paths.

    The CSV holds every number in long form (one row per metric and system) and,
    to stay machine-readable, no caption; the other three hold the caption, the
    ``mean ± std`` cells with the best in bold, significance marks and a legend.
    """
    metrics = list(metrics)
    out_prefix = Path(out_prefix)
    # Render everything before writing anything, so a formatting error leaves no files.
    numbers = long_numbers(table, metrics)
    documents = {
        ".md": markdown_document(table, metrics, caption),
        ".tex": latex_document(table, metrics, caption),
        ".html": html_document(table, metrics, caption),
    }
    csv_path = out_prefix.with_name(out_prefix.name + ".csv")
    written = [atomic.write_csv(numbers, csv_path)]
    for suffix, text in documents.items():
        written.append(atomic.write_text(out_prefix.with_name(out_prefix.name + suffix), text))
    return written
