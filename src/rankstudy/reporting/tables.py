"""The comparison tables of systems (:mod:`rankstudy.reporting.comparison`'s numbers) as text:
the cells and their marks, the legend, and the CSV/Markdown/LaTeX/HTML files."""

from __future__ import annotations

import html
import html.parser
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.evaluation.learning import MAX_TIED_SHARE
from rankstudy.util import atomic
from rankstudy.reporting import power
from rankstudy.reporting.marks import BETTER_MARK, FEW_QUERIES_MARK, NOT_LEARNED_MARK, TIED_MARK, WORSE_MARK
from rankstudy.reporting.comparison import (COMPARE_MODES, DEFAULT_MIN_QUERIES, PAIRS_TEST, TEST_NAMES,
                                            direction, long_numbers)


# --------------------------------------------------------------------------- cell texts


def mean_std_text(mean: float, std: float) -> str:
    """``0.4523 ± 0.0121``; just the mean with one fold (std undefined); ``–`` if no value."""
    if np.isnan(mean):
        return "–"
    if np.isnan(std):
        return f"{mean:.4f}"
    return f"{mean:.4f} ± {std:.4f}"


def diff_text(diff: float, lo: float, hi: float) -> str:
    """``+0.0213 [+0.0102, +0.0324]``; without the interval under two pairs; ``–`` if no pair."""
    if np.isnan(diff):
        return "–"
    if np.isnan(lo):
        return f"{diff:+.4f}"
    return f"{diff:+.4f} [{lo:+.4f}, {hi:+.4f}]"


def p_text(p: float) -> str:
    """Three significant digits, so a p just under alpha does not print as alpha; ``<0.001`` below."""
    if np.isnan(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3g}"


def system_letters(systems: Sequence[str]) -> dict[str, str]:
    """Each system's label in all-pairs mode, in table order: a, b, ..., z, aa, ab, ..."""
    def label(i: int) -> str:
        text = ""
        i += 1
        while i:
            i, rest = divmod(i - 1, 26)
            text = chr(ord("a") + rest) + text
        return text

    return {system: label(i) for i, system in enumerate(systems)}


def beaten_systems(pairs: pd.DataFrame, metric: str, systems: Sequence[str]) -> dict[str, list[str]]:
    """Per system, the systems it beats on ``metric`` (the pairs' ``winner``), in table order."""
    beaten: dict[str, set[str]] = {s: set() for s in systems}
    part = pairs[pairs["metric"] == metric]
    for system, other, winner in zip(part["system"], part["other"], part["winner"]):
        if winner == system:
            beaten[system].add(other)
        elif winner == other:
            beaten[other].add(system)
    return {s: [o for o in systems if o in beaten[s]] for s in systems}


def few_query_systems(pairs: pd.DataFrame, metric: str) -> set[str]:
    """The systems with a pair on ``metric`` that has too few queries to be tested."""
    part = pairs[(pairs["metric"] == metric) & pairs["too_few_queries"].astype(bool)]
    return set(part["system"]) | set(part["other"])


@dataclass(frozen=True)
class Cell:
    """What one (system, metric) cell of the main table shows, before markup."""

    text: str  # mean ± std
    best: bool
    direction: str = "none"  # better / worse than the baseline (baseline mode)
    sig_ttest: bool = False
    sig_rand: bool = False
    too_few: bool = False  # too few paired queries: no significance is marked
    beats: tuple[str, ...] | None = None  # all-pairs mode: labels of the systems it beats


def main_cells(table: pd.DataFrame, metrics: Sequence[str], pairs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Cells (systems x metrics); ``pairs`` given: all-pairs mode, else against the baseline."""
    baseline = table.attrs.get("baseline", table.index[0])
    systems = list(table.index)
    letters = system_letters(systems)
    columns = {}
    for metric in metrics:
        part = table[metric]
        beaten = beaten_systems(pairs, metric, systems) if pairs is not None else None
        few = few_query_systems(pairs, metric) if pairs is not None else set()
        cells = []
        for system, row in part.iterrows():  # a handful of systems
            text = mean_std_text(row["mean"], row["std"])
            if beaten is not None:
                cells.append(Cell(text, bool(row["best"]), too_few=system in few,
                                  beats=tuple(letters[s] for s in beaten[system])))
            elif system == baseline:
                cells.append(Cell(text, bool(row["best"])))
            else:
                cells.append(Cell(text, bool(row["best"]), str(row["direction"]), bool(row["sig_ttest"]),
                                  bool(row["sig_rand"]), bool(row["too_few_queries"])))
        columns[metric] = cells
    return pd.DataFrame(columns, index=table.index)


# --------------------------------------------------------------------------- markup


@dataclass(frozen=True)
class Style:
    """How one output format writes text and marks."""

    escape: Callable[[str], str]
    bold: Callable[[str], str]
    arrows: dict[str, str]  # better / worse
    symbols: dict[str, str]  # ttest / rand / few, as superscript content
    letters: Callable[[str], str]  # a label string as superscript content
    marks: Callable[[str, str], str]  # (arrow, superscript content) -> the marks as written
    cell: Callable[[str, str], str]  # (body, marks) -> the cell as written
    # a cell's second line (HTML: the std, an interval, a feature set under the number or name, so
    # the table fits a screen); None: one line
    second_line: Callable[..., str] | None = None  # (text, value=True): under a number, or a name
    letter_ranges: bool = False  # letters a, b, c, d, f written as a–d,f

    def mark(self, arrow: str = "", *symbols: str) -> str:
        """Marks alone, e.g. for the legend: ``style.mark("better", "ttest")``."""
        return self.marks(self.arrows.get(arrow, ""), "".join(self.symbols[s] for s in symbols))


def split_lines(style: Style, text: str, separator: str, prefix: str | None = None) -> tuple[str, str]:
    """``text`` up to ``separator``, and the rest after ``prefix`` (default: the separator without
    its leading space) for a second line where the style has second lines; else all of ``text`` and ''."""
    if style.second_line is None or separator not in text:
        return text, ""
    head, tail = text.split(separator, 1)
    return head, (separator.lstrip() if prefix is None else prefix) + tail


def letter_ranges(labels: Sequence[str], order: Sequence[str], joiner: str) -> str:
    """``labels`` (in ``order``) with runs of three or more consecutive ones as ranges: a, b, c,
    d, f -> a–d,f (the pieces then joined by commas), where that is shorter than the labels
    joined by ``joiner`` as before (abcdf)."""
    position = {label: i for i, label in enumerate(order)}
    indices = sorted(position[label] for label in labels)
    pieces, ranged, start = [], False, 0
    for i in range(1, len(indices) + 1):
        if i == len(indices) or indices[i] != indices[i - 1] + 1:
            run = indices[start:i]
            if len(run) >= 3:
                pieces.append(f"{order[run[0]]}–{order[run[-1]]}")
                ranged = True
            else:
                pieces += [order[j] for j in run]
            start = i
    plain = joiner.join(order[j] for j in indices)
    shorter = ",".join(pieces) if ranged else plain
    return shorter if len(shorter) < len(plain) else plain  # scattered letters read better plain


def cell_text(cell: Cell, style: Style, labels_joiner: str, order: Sequence[str] = ()) -> str:
    text, second = split_lines(style, cell.text, " ± ", "±")  # ±0.0121 under 0.4523: a narrower column
    body = style.escape(text)
    if cell.best:
        body = style.bold(body)
    below = style.second_line(style.escape(second)) if second else ""
    if cell.too_few:
        return style.cell(body, style.mark("", "few")) + below
    if cell.beats is not None:
        labels = (letter_ranges(cell.beats, order, labels_joiner) if style.letter_ranges and order
                  else labels_joiner.join(cell.beats))
        marks = style.marks("", style.letters(labels)) if cell.beats else ""
        return style.cell(body, marks) + below
    if cell.direction == "none":
        return style.cell(body, "") + below
    tests = [name for name, on in (("ttest", cell.sig_ttest), ("rand", cell.sig_rand)) if on]
    return style.cell(body, style.mark(cell.direction, *tests)) + below


def name_text(style: Style, table: pd.DataFrame, system: str) -> str:
    """A system's name as the style writes it: the feature set on a second line where it has them."""
    name, featureset = split_lines(style, shown_system(table, system), " [")
    return style.escape(name) + (style.second_line(style.escape(featureset), value=False) if featureset else "")


def shown_system(table: pd.DataFrame, system: str) -> str:
    marks = [mark for mark, flagged in ((NOT_LEARNED_MARK, table.attrs.get("not_learned", {})),
                                        (TIED_MARK, table.attrs.get("tied_scores", {}))) if system in flagged]
    return " ".join([str(system), *marks])


@dataclass(frozen=True)
class Grid:
    """A table ready for one format: header, rows of written cells, alignment per column."""

    header: list[str]
    rows: list[list[str]]
    align: list[str]  # "l" or "r"
    separate_first: bool = False  # the baseline row, set apart


RANDOM_ROW = "(a random ranking)"
TOP_GROUP_ROW = "(top group)"
MDD_ROW = "(MDD)"  # short: the row's label sets the width of the names' column


def top_group_size(table: pd.DataFrame, pairs: pd.DataFrame, metric: str) -> int:
    """How many systems no system with the best mean of ``metric`` beats (the pairs' winners):
    the top group the leaderboard shows."""
    best = set(table.index[table[metric]["best"].astype(bool)])
    part = pairs[pairs["metric"] == metric]
    won = part["winner"].fillna("").astype(str)
    loser = np.where(won == part["system"], part["other"], part["system"])
    beaten = set(loser[won.isin(best).to_numpy()])
    return len(table) - len(beaten & set(table.index))


def main_grid(table: pd.DataFrame, metrics: Sequence[str], style: Style, pairs: pd.DataFrame | None) -> Grid:
    cells = main_cells(table, metrics, pairs)
    letters = system_letters(list(table.index))
    joiner = "" if all(len(label) == 1 for label in letters.values()) else ","
    lead = ["#", "system"] if pairs is not None else ["system"]
    rows = []
    order = list(letters.values())
    for system in table.index:
        names = [name_text(style, table, system)]
        if pairs is not None:
            names.insert(0, letters[system])
        rows.append(names + [cell_text(cells.loc[system, m], style, joiner, order) for m in metrics])
    random = table.attrs.get("random") or {}
    if random:  # the floor every system must clear: not tested, not ranked
        rows.append([""] * (len(lead) - 1) + [style.escape(RANDOM_ROW)]
                    + [style.escape(mean_std_text(random.get(m, np.nan), np.nan)) for m in metrics])
    # what the data set can separate, beside how many systems it could not tell from the best
    if pairs is not None:
        sizes = [top_group_size(table, pairs, m) for m in metrics]
        rows.append([""] * (len(lead) - 1) + [style.escape(TOP_GROUP_ROW)]
                    + [style.escape(f"{k} of {len(table)}") for k in sizes])
    mdd = [power_summary(table, m, pairs)["mdd"] for m in metrics]
    if not all(np.isnan(mdd)):
        rows.append([""] * (len(lead) - 1) + [style.escape(MDD_ROW)]
                    + [style.escape(power.mdd_text(v)) for v in mdd])
    return Grid([style.escape(h) for h in (*lead, *metrics)], rows, ["l"] * len(lead) + ["r"] * len(metrics),
                separate_first=pairs is None)


def baseline_detail_grids(table: pd.DataFrame, metrics: Sequence[str], style: Style) -> dict[str, Grid]:
    """The differences from the baseline and the p-values, each with its heading."""
    baseline = table.attrs.get("baseline", table.index[0])
    others = [s for s in table.index if s != baseline]
    few = style.mark("", "few")

    def grid(text_of, separator: str) -> Grid:
        rows = []
        for system in others:
            row = [name_text(style, table, system)]
            for metric in metrics:
                part = table.loc[system, metric]
                text, second = split_lines(style, text_of(part), separator)  # e.g. the interval under the difference
                row.append(style.cell(style.escape(text), few if part["too_few_queries"] else "")
                           + (style.second_line(style.escape(second)) if second else ""))
            rows.append(row)
        return Grid([style.escape(h) for h in ("system", *metrics)], rows, ["l"] + ["r"] * len(metrics))

    return {
        f"Difference from the baseline {baseline}: mean over paired test queries of system - baseline "
        f"[{interval_text(table.attrs.get('alpha', 0.05))}].":
            grid(lambda part: diff_text(part["diff"], part["diff_lo"], part["diff_hi"]), " ["),
        f"Holm-adjusted p-values vs the baseline {baseline}: paired t-test / randomization test.":
            grid(lambda part: f"{p_text(part['p_ttest_holm'])} / {p_text(part['p_rand_holm'])}", " / "),
        f"Wins / ties / losses against the baseline {baseline}: paired test queries where the system scores "
        f"above / equal to / below it, of n.": grid(lambda part: f"{part['wins']} / {part['ties']} / {part['losses']} "
                                                                 f"of {part['n_pairs']}", " of "),
    }


# --------------------------------------------------------------------------- legend


def not_learned_text(table: pd.DataFrame) -> str:
    """The legend's sentence on systems that did not learn, or ''."""
    flagged = table.attrs.get("not_learned", {})
    if not flagged:
        return ""
    parts = [f"{system}: fold(s) {', '.join(map(str, sorted(folds)))} ({next(iter(folds.values()))[0]})"
             for system, folds in flagged.items()]
    return (f" {NOT_LEARNED_MARK}: the chosen model did not learn (its training objective did not fall "
            f"clearly below its start, or it was no better than a random ranking): " + "; ".join(parts) + ".")


def tied_scores_text(table: pd.DataFrame) -> str:
    """The legend's sentence on systems whose test scores were all tied, or ''."""
    flagged = table.attrs.get("tied_scores", {})
    if not flagged:
        return ""
    threshold = table.attrs.get("max_tied_share", MAX_TIED_SHARE)
    parts = [f"{system}: " + ", ".join(f"fold {f} ({share:.0%} of its queries)" for f, share in sorted(folds.items()))
             for system, folds in flagged.items()]
    return (f" {TIED_MARK}: every test score of a query tied in more than {threshold:.0%} of the queries "
            f"(report.max_tied_share), so the ranking is the input order and the metrics measure the file's "
            f"order, not the model (a test feature far outside the training range can do this): "
            + "; ".join(parts) + ".")


def few_query_counts(table: pd.DataFrame, metrics: Sequence[str], pairs: pd.DataFrame | None) -> list[int]:
    """The paired query counts below ``min_queries`` that the table marks."""
    if pairs is not None:
        part = pairs[pairs["metric"].isin(list(metrics)) & pairs["too_few_queries"].astype(bool)]
        return sorted(set(part["n_pairs"].astype(int)))
    baseline = table.attrs.get("baseline", table.index[0])
    long = long_numbers(table, metrics)
    long = long[(long["system"] != baseline) & long["too_few_queries"].astype(bool)]
    return sorted(set(long["n_pairs"].astype(int)))


def few_queries_text(table: pd.DataFrame, metrics: Sequence[str], pairs: pd.DataFrame | None) -> str:
    counts = few_query_counts(table, metrics, pairs)
    if not counts:
        return ""
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    return (f": only n = {n} paired test queries, fewer than {table.attrs.get('min_queries')} "
            f"(report.min_queries), too few for a test to mean much: no significance is marked.")


def validation_warning(table: pd.DataFrame) -> str:
    """The warning on folds whose validation split is smaller than ``min_queries``, or ''."""
    threshold = table.attrs.get("min_queries", DEFAULT_MIN_QUERIES)
    few = {f: n for f, n in sorted(table.attrs.get("vali_queries", {}).items()) if n < threshold}
    if not few:
        return ""
    folds = ", ".join(f"fold {f} ({n} queries)" for f, n in few.items())
    return (f"model selection chose on fewer than {threshold} validation queries in {folds}: the chosen "
            f"hyper-parameters (and early stopping) may follow noise.")


def interval_text(alpha: float) -> str:
    """What the differences' intervals are, in the tables' words."""
    return (f"t-interval at the level Holm's step-down tested the pair at, 1 - {alpha:g} p / p_Holm of the paired "
            f"t-test (at least {1 - alpha:.0%}): it excludes 0 exactly where the Holm-adjusted t-test has p < "
            f"{alpha:g}")


def power_summary(table: pd.DataFrame, metric: str, pairs: pd.DataFrame | None = None) -> dict[str, float]:
    """The data set's minimum detectable difference of ``metric`` (:func:`rankstudy.reporting.power.dataset_power`)
    over the tested pairs: ``pairs``, or the table's systems against the baseline."""
    part = pairs if pairs is not None else table[metric].drop(index=table.attrs.get("baseline", table.index[0]))
    found = power.dataset_power(part, metric)
    return {"mdd": found.mdd, "mdd_family": found.mdd_family, "n_pairs": found.n_pairs}


def power_sentence(table: pd.DataFrame, metric: str, pairs: pd.DataFrame | None = None) -> str:
    """The caption's sentence on what the data set can tell apart in ``metric``, or '' (the
    legend defines the MDD)."""
    part = pairs if pairs is not None else table[metric].drop(index=table.attrs.get("baseline", table.index[0]))
    text = power.headline(power.dataset_power(part, metric), metric)
    return f" Power: {text}" if text else ""


def legend(table: pd.DataFrame, metrics: Sequence[str], style: Style, pairs: pd.DataFrame | None,
           pm: str = "±") -> str:
    """The legend of the main table; ``style.escape`` applies to the prose, not to the marks."""
    e = style.escape
    alpha = table.attrs.get("alpha", 0.05)
    n_resamples = table.attrs.get("n_resamples", "?")
    text = e("Mean ") + pm + e(" std over folds of the per-fold test means; bold: best per metric. ")
    if pairs is not None:
        n_tested = len(pairs[pairs["metric"] == metrics[0]]) if len(metrics) else 0
        test = pairs["decided_by"].iloc[0] if len(pairs) else PAIRS_TEST
        resamples = f" ({n_resamples} resamples)" if test == "rand" else ""
        text += e(f"Superscript letters: the systems (by column #) this one beats, with a higher mean over paired "
                  f"test queries and p < {alpha:g} by the {TEST_NAMES[test]}{resamples}, Holm-corrected "
                  f"over all {n_tested} pairs of systems of the metric (like ranx's compare). Every pair's "
                  f"difference, interval ({interval_text(alpha)}), MDD and both "
                  f"tests' p-values are in the .pairs.csv file.")
    else:
        baseline = table.attrs.get("baseline", table.index[0])
        text += (style.mark("better") + e("/") + style.mark("worse")
                 + e(f": better/worse than the baseline {baseline} (sign of the mean paired difference), "
                     f"significantly by ") + style.mark("", "ttest")
                 + e(" the paired t-test and/or ") + style.mark("", "rand")
                 + e(f" the paired sign-flip randomization test ({n_resamples} resamples), "
                     + (f"each Holm-corrected across the {len(table) - 1} systems compared with it"
                        if len(table) > 2 else "one system compared with it, so no correction")
                     + f", p < {alpha:g}. Differences with their intervals (Holm-consistent: each excludes 0 "
                       f"exactly where the Holm-adjusted t-test is significant), the adjusted p-values and the "
                       f"wins / ties / losses over paired queries follow below."))
    if pairs is not None:
        text += e(f" {TOP_GROUP_ROW}: the systems no system with the best mean beats, the leaderboard's top group.")
    if any(not np.isnan(power_summary(table, m, pairs)["mdd"]) for m in metrics):
        text += e(f" {MDD_ROW}: the data set's MDD. {power.definition(alpha)}.")
    few = few_queries_text(table, metrics, pairs)
    if few:
        text += " " + style.mark("", "few") + e(few)
    if table.attrs.get("random"):
        text += e(f" {RANDOM_ROW}: the mean over folds of 10 seeded random rankings per fold, on the same "
                  f"test queries: the floor a model that learned clears (not tested, not ranked).")
    return text + e(not_learned_text(table)) + e(tied_scores_text(table))


# Markdown ------------------------------------------------------------------


def markdown_escape(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")


_SUPERSCRIPTS = dict(zip("abcdefghijklmnopqrstuvwxyz,", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ˒"))

MARKDOWN = Style(
    escape=markdown_escape,
    bold=lambda body: f"**{body}**",
    arrows={"better": BETTER_MARK, "worse": WORSE_MARK},
    symbols={"ttest": "\\*", "rand": "†", "few": FEW_QUERIES_MARK},
    letters=lambda labels: "".join(_SUPERSCRIPTS.get(ch, ch) for ch in labels),
    marks=lambda arrow, sup: arrow + sup,
    cell=lambda body, marks: f"{body} {marks}" if marks else body,
)


def markdown_grid(grid: Grid) -> str:
    align = {"l": "left", "r": "right"}
    frame = pd.DataFrame(grid.rows, columns=grid.header)
    return frame.to_markdown(index=False, colalign=[align[a] for a in grid.align])


def markdown_document(table: pd.DataFrame, metrics: Sequence[str], caption: str,
                      pairs: pd.DataFrame | None = None) -> str:
    style = MARKDOWN
    parts = [markdown_escape(caption)]
    warning = validation_warning(table)
    if warning:
        parts.append(f"**Warning:** {markdown_escape(warning)}")
    parts += [markdown_grid(main_grid(table, metrics, style, pairs)), legend(table, metrics, style, pairs)]
    if pairs is None:
        for heading, grid in baseline_detail_grids(table, metrics, style).items():
            parts += [markdown_escape(heading), markdown_grid(grid)]
    return "\n\n".join(parts) + "\n"


# LaTeX ---------------------------------------------------------------------

# '[' and ']' are braced so a row starting with '[' is not read as the optional
# argument of the previous '\\'. '@' needs no escape in body text (it is special
# only in column specs and under \makeatletter), so it is left as is. Text-mode
# '<', '>' and '|' print as other glyphs in the OT1 encoding, hence math mode.
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
    "<": r"$<$",
    ">": r"$>$",
    "<=": r"$\leq$",
    ">=": r"$\geq$",
    "|": r"$|$",
    "±": r"$\pm$",
    "†": r"$^{\dagger}$",
    "–": "--",
    "—": "---",
    "−": r"$-$",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "×": r"$\times$",
    "…": r"\ldots{}",
    FEW_QUERIES_MARK: r"\S{}",
    BETTER_MARK: r"$\uparrow$",
    WORSE_MARK: r"$\downarrow$",
    NOT_LEARNED_MARK: r"(!)",
    TIED_MARK: r"$\equiv$",
}
_LATEX_TOKEN = re.compile(r"<=|>=|.", re.S)


def latex_escape(text: str) -> str:
    return _LATEX_TOKEN.sub(lambda m: _LATEX_ESCAPES.get(m.group(0), m.group(0)), str(text))


def _latex_marks(arrow: str, sup: str) -> str:
    # one math group per cell: "$a$$b$" would risk being read as display math
    if not arrow and not sup:
        return ""
    return "$" + arrow + (f"^{{{sup}}}" if sup else "") + "$"


LATEX = Style(
    escape=latex_escape,
    bold=lambda body: rf"\textbf{{{body}}}",
    arrows={"better": r"\uparrow", "worse": r"\downarrow"},
    symbols={"ttest": "*", "rand": r"\dagger", "few": r"\S"},
    letters=lambda labels: rf"\mathrm{{{labels}}}",
    marks=_latex_marks,
    cell=lambda body, marks: body + marks,
)
LATEX_PREAMBLE_NOTE = r"% Needs \usepackage{booktabs} in the preamble (\toprule, \midrule, \bottomrule)."


def latex_tabular(grid: Grid) -> list[str]:
    rows = [" & ".join(row) + r" \\" for row in grid.rows]
    if grid.separate_first and rows:
        rows = [rows[0], r"\midrule", *rows[1:]]  # the baseline, set apart from the systems compared with it
    return [r"\begin{tabular}{" + "".join(grid.align) + "}", r"\toprule", " & ".join(grid.header) + r" \\",
            r"\midrule", *rows, r"\bottomrule", r"\end{tabular}"]


def latex_document(table: pd.DataFrame, metrics: Sequence[str], caption: str,
                   pairs: pd.DataFrame | None = None) -> str:
    """A ``table`` float holding booktabs ``tabular``s; the first line says it needs booktabs."""
    style = LATEX
    lines = [LATEX_PREAMBLE_NOTE, r"\begin{table}[t]", r"\centering", rf"\caption{{{latex_escape(caption)}}}"]
    warning = validation_warning(table)
    if warning:
        lines.append(r"{\footnotesize\textbf{Warning:} " + latex_escape(warning) + r"\par}\smallskip")
    lines += latex_tabular(main_grid(table, metrics, style, pairs))
    # \par inside the group, so the small text gets its own line spacing
    lines.append(r"\par\smallskip{\footnotesize " + legend(table, metrics, style, pairs, pm=r"$\pm$") + r"\par}")
    if pairs is None:
        for heading, grid in baseline_detail_grids(table, metrics, style).items():
            lines += [r"\par\medskip{\footnotesize " + latex_escape(heading) + r"\par}\smallskip",
                      *latex_tabular(grid)]
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


# HTML ----------------------------------------------------------------------

HTML_STYLE = """<style>
body { font-family: sans-serif; }
table.comparison { border-collapse: collapse; margin: 0.8em 0; font-variant-numeric: tabular-nums; font-size: 90%; }
table.comparison caption { caption-side: top; text-align: left; padding-bottom: 0.4em; max-width: 70em; }
table.comparison th, table.comparison td { border: 1px solid #bbb; padding: 0.25em 0.45em; }
table.comparison thead th { background: #e8e8e8; }
table.comparison tbody tr:nth-child(even) { background: #f5f5f5; }
table.comparison td { text-align: right; white-space: nowrap; }
table.comparison th[scope=row] { text-align: left; font-weight: normal; white-space: nowrap; }
table.comparison tr.baseline { border-bottom: 3px double #888; }
/* marks in a box of fixed width, so the numbers stay aligned; sup does not move the line */
.marks { display: inline-block; min-width: MARKS_WIDTH; text-align: left; padding-left: 0.2em; }
sup { line-height: 0; vertical-align: super; font-size: 75%; }
/* the std, an interval or a feature set, under the number or the name */
.sub { font-size: 85%; color: #555; }
.better { color: #1a7f37; }
.worse { color: #c62828; }
p.legend { font-size: 90%; max-width: 70em; }
p.warning { background: #fff3cd; border: 1px solid #e0a800; padding: 0.4em 0.6em; max-width: 70em; }
</style>"""


def _html_marks(arrow: str, sup: str) -> str:
    return arrow + (f"<sup>{sup}</sup>" if sup else "")


HTML = Style(
    escape=html.escape,
    bold=lambda body: f"<b>{body}</b>",
    arrows={"better": f'<span class="better">{BETTER_MARK}</span>',
            "worse": f'<span class="worse">{WORSE_MARK}</span>'},
    symbols={"ttest": "*", "rand": "†", "few": FEW_QUERIES_MARK},
    letters=html.escape,
    marks=_html_marks,
    cell=lambda body, marks: f'{body}<span class="marks">{marks}</span>',
    # under a number, an empty marks box keeps the second line's digits under the first line's
    second_line=lambda text, value=True: (f'<br><span class="sub">{text}</span>'
                                          + ('<span class="marks"></span>' if value else "")),
    letter_ranges=True,
)


# what a table may span: about 1,000 px, in ems of its font (90% of the browser's 16 px)
HTML_WIDTH_EM = 1000 / (0.9 * 16)
_CELL_PADDING_EM = 0.9 + 0.07  # both sides' padding and a border
_CHAR_EM = 0.62  # a digit or letter of a sans-serif font, a little generous
_SMALLER = {"sup": 0.75, "sub": 0.85}  # <sup>, and <span class="sub">


class _WidthEstimate(html.parser.HTMLParser):
    """The width in em of one cell's HTML: its widest line (<br> splits lines), characters at
    _CHAR_EM times the size of the element they are in, and .marks boxes at least their min-width."""

    def __init__(self, marks_em: float):
        super().__init__()
        self.marks_em, self.lines, self.scales, self.box = marks_em, [0.0], [1.0], None

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        if tag == "br":
            self.lines.append(0.0)
            return
        scale = self.scales[-1] * (_SMALLER["sup"] if tag == "sup" else _SMALLER["sub"] if "sub" in classes else 1.0)
        self.scales.append(scale)
        if "marks" in classes:
            self.box = self.lines[-1]

    def handle_endtag(self, tag):
        if tag == "br":
            return
        self.scales.pop()
        if self.box is not None and tag == "span" and len(self.scales) == 1:
            self.lines[-1] = max(self.lines[-1], self.box + self.marks_em)
            self.box = None

    def handle_data(self, data):
        self.lines[-1] += len(data) * _CHAR_EM * self.scales[-1]

    def width(self, text: str) -> float:
        self.feed(text)
        self.close()
        return max(self.lines)


def html_column_widths(grid: Grid, marks_em: float) -> list[float]:
    """Each column's estimated width in em, padding included: its widest cell or header."""
    widths = [_WidthEstimate(marks_em).width(h) for h in grid.header]
    for row in grid.rows:
        widths = [max(w, _WidthEstimate(marks_em).width(c)) for w, c in zip(widths, row)]
    return [w + _CELL_PADDING_EM for w in widths]


def html_blocks(grid: Grid, marks_em: float, budget_em: float = HTML_WIDTH_EM) -> list[Grid]:
    """``grid`` as consecutive blocks of its value columns, each with the name columns and no
    wider than ``budget_em`` (at least one value column a block), so no table needs scrolling."""
    n_names = grid.align.index("r") if "r" in grid.align else len(grid.align)
    widths = html_column_widths(grid, marks_em)
    blocks, current, used = [], [], sum(widths[:n_names])
    for j in range(n_names, len(widths)):
        if current and used + widths[j] > budget_em:
            blocks.append(current)
            current, used = [], sum(widths[:n_names])
        current.append(j)
        used += widths[j]
    if current or not blocks:
        blocks.append(current)
    # as many blocks, of near-equal column counts where they fit (4 + 4, not 7 + 1)
    even = [list(part) for part in np.array_split(np.arange(n_names, len(widths)), len(blocks))]
    if all(sum(widths[:n_names]) + sum(widths[j] for j in part) <= budget_em for part in even):
        blocks = even
    keep = lambda row, block: row[:n_names] + [row[j] for j in block]  # noqa: E731
    return [Grid(keep(grid.header, b), [keep(r, b) for r in grid.rows], keep(grid.align, b), grid.separate_first)
            for b in blocks]


def html_table(grid: Grid, caption: str, marks_em: float = 0.0) -> str:
    """One ``<table>``, or several side by side in reading order when the columns would not fit
    :data:`HTML_WIDTH_EM` (the caption on the first, "continued" on the others)."""
    tables = []
    blocks = html_blocks(grid, marks_em)
    for k, block in enumerate(blocks):
        head = "".join(f"<th>{h}</th>" for h in block.header)
        rows = []
        for i, row in enumerate(block.rows):
            attr = ' class="baseline"' if block.separate_first and i == 0 else ""
            n_names = block.align.index("r") if "r" in block.align else len(row)
            names = "".join(f'<th scope="row">{c}</th>' for c in row[:n_names])
            values = "".join(f"<td>{c}</td>" for c in row[n_names:])
            rows.append(f"<tr{attr}>{names}{values}</tr>")
        body = "\n".join(rows)
        title = caption if k == 0 else f"(continued, {k + 1} of {len(blocks)})"
        tables.append(f'<table class="comparison">\n<caption>{title}</caption>\n<thead><tr>{head}</tr></thead>\n'
                      f"<tbody>\n{body}\n</tbody>\n</table>")
    return "\n".join(tables)


def html_marks_width(table: pd.DataFrame, metrics: Sequence[str], pairs: pd.DataFrame | None) -> float:
    """Room (em) for the widest marks of the table: an arrow and two marks, or the longest list of
    letters (runs written as ranges, as HTML writes them)."""
    if pairs is None:
        return 2.0
    letters = system_letters(list(table.index))
    order = list(letters.values())
    joiner = "" if all(len(label) == 1 for label in letters.values()) else ","
    widest = max((len(letter_ranges([letters[s] for s in beaten], order, joiner)) for metric in metrics
                  for beaten in beaten_systems(pairs, metric, list(table.index)).values()), default=0)
    return round(0.45 * widest + 0.3, 1)  # superscript letters are about 0.45em wide


def html_document(table: pd.DataFrame, metrics: Sequence[str], caption: str,
                  pairs: pd.DataFrame | None = None) -> str:
    style = HTML
    parts = []
    warning = validation_warning(table)
    if warning:
        parts.append(f'<p class="warning"><b>Warning:</b> {html.escape(warning)}</p>')
    marks_em = html_marks_width(table, metrics, pairs)
    parts += [html_table(main_grid(table, metrics, style, pairs), html.escape(caption), marks_em),
              f'<p class="legend">{legend(table, metrics, style, pairs)}</p>']
    if pairs is None:
        parts += [html_table(grid, html.escape(heading), marks_em)
                  for heading, grid in baseline_detail_grids(table, metrics, style).items()]
    css = HTML_STYLE.replace("MARKS_WIDTH", f"{marks_em:g}em")
    body = "\n".join(parts)
    return (
        "<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\">"
        f"<title>{html.escape(caption)}</title>\n{css}\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


# --------------------------------------------------------------------------- files


def write_tables(table: pd.DataFrame, metrics: Sequence[str], out_prefix: Path, caption: str,
                 pairs: pd.DataFrame | None = None, compare: str = "baseline") -> list[Path]:
    """Write ``out_prefix`` + ``.csv`` / ``.md`` / ``.tex`` / ``.html`` (and ``.pairs.csv``
    with ``pairs``); return the paths.

    The CSVs hold every number in long form (one row per metric and system, or per metric and
    pair) and, to stay machine-readable, no caption; the other three hold the caption, the
    ``mean ± std`` cells with the best in bold, significance marks as ``compare`` says
    (``baseline``, or ``all_pairs`` from ``pairs``) and a legend.
    """
    if compare not in COMPARE_MODES:
        raise ValueError(f"compare must be one of {COMPARE_MODES}, got {compare!r}")
    if compare == "all_pairs" and pairs is None:
        raise ValueError("compare='all_pairs' needs the pairs (all_pairs_comparison)")
    metrics = list(metrics)
    out_prefix = Path(out_prefix)
    shown_pairs = pairs if compare == "all_pairs" else None
    # Render everything before writing anything, so a formatting error leaves no files.
    numbers = long_numbers(table, metrics)
    documents = {
        ".md": markdown_document(table, metrics, caption, shown_pairs),
        ".tex": latex_document(table, metrics, caption, shown_pairs),
        ".html": html_document(table, metrics, caption, shown_pairs),
    }
    csv_path = out_prefix.with_name(out_prefix.name + ".csv")
    written = [atomic.write_csv(numbers, csv_path)]
    for suffix, text in documents.items():
        written.append(atomic.write_text(out_prefix.with_name(out_prefix.name + suffix), text))
    if pairs is not None:
        written.append(atomic.write_csv(pairs, out_prefix.with_name(out_prefix.name + ".pairs.csv")))
    return written
