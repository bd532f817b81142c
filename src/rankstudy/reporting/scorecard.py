"""The reproduction scorecard: every published cell whose data set we have, ours beside it.

For each cell of a study's ``paper`` table on our data set (and each claim of a paper that prints
an order instead of numbers) the scorecard gives our mean over folds (of per-fold means, as the
comparison tables do), the std over folds, a 95% interval, the difference to the paper and a
verdict; then the evaluation conventions of :mod:`rankstudy.evaluation.conventions` applied to
the same written scores, and the one closest to the paper.

The interval is a percentile bootstrap over test queries, resampled within each fold (each fold's
queries are drawn with replacement, its mean taken, then the mean over folds), so it holds the
uncertainty of a test set of this size, not of the training. Verdicts:

* ``reproduced``: the published number lies in our interval;
* ``below``: ours is below the paper (the published number lies above the interval);
* ``above``: ours is above the paper;
* ``not run``: the study does not run that system (a method the paper only quotes).

A claim ``better > worse`` on a metric is ``reproduced`` when the interval of the mean paired
difference (same queries, same resampling) lies above 0, ``no difference`` when it holds 0,
``reversed`` when it lies below 0.

Everything here is a function of frames; the script reads the files (``workflow/scripts/scorecard.py``).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rankstudy.evaluation import conventions
from rankstudy.reporting.significance import randomization_test

INTERVAL = "95% percentile bootstrap over test queries, resampled within folds"
VERDICTS = ("reproduced", "below", "above", "not run")
CLAIM_VERDICTS = ("reproduced", "no difference", "reversed")
CSV_COLUMNS = ["kind", "paper", "study", "row", "column", "system", "metric", "published", "ours", "ours_std",
               "ci_low", "ci_high", "diff", "verdict", "closest_convention", "closest_value", "closest_verdict",
               "n_queries", "learned"]


@dataclass(frozen=True)
class FoldScores:
    """One system's written test scores of one fold: flat arrays grouped by query."""

    scores: np.ndarray
    labels: np.ndarray
    offsets: np.ndarray
    qids: np.ndarray

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> "FoldScores":
        """From a ``scores.test.tsv`` frame (qid, doc, label, score); documents of a query keep
        their file order (ties in score keep it too, as in evaluation)."""
        order = np.argsort(frame["qid"].to_numpy(), kind="stable")
        qid = frame["qid"].to_numpy()[order]
        starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]]) if len(qid) else np.zeros(0, dtype=int)
        return cls(frame["score"].to_numpy(dtype=np.float64)[order], frame["label"].to_numpy(dtype=np.float64)[order],
                   np.r_[starts, len(qid)].astype(np.int64), qid[starts])


def query_values(folds: dict[int, FoldScores], metric: str, convention: dict) -> dict[int, pd.Series]:
    """Per fold, the metric of each test query (indexed by qid) under ``convention``."""
    return {fold: pd.Series(conventions.per_query(f.scores, f.labels, f.offsets, metric, convention), index=f.qids)
            for fold, f in folds.items()}


def bootstrap_means(values: dict[int, np.ndarray], n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples,) means over folds of per-fold means, each fold's queries resampled with
    replacement. The draws depend only on the folds' sizes and ``seed``, so two systems (or two
    conventions) with the same queries get the same draws: their intervals are paired."""
    total = np.zeros(n_resamples)
    for fold in sorted(values):
        v = np.asarray(values[fold], dtype=np.float64)
        rng = np.random.default_rng([seed, fold])
        total += v[rng.integers(0, len(v), size=(n_resamples, len(v)))].mean(axis=1)
    return total / len(values)


def summarise(values: dict[int, np.ndarray], n_resamples: int, seed: int, confidence: float) -> dict:
    """Mean over folds of per-fold means, std over folds, and the bootstrap interval."""
    fold_means = np.array([np.mean(values[f]) for f in sorted(values)])
    draws = bootstrap_means(values, n_resamples, seed)
    tail = (1.0 - confidence) / 2.0
    return {"ours": float(fold_means.mean()),
            "ours_std": float(fold_means.std(ddof=1)) if len(fold_means) > 1 else np.nan,
            "ci_low": float(np.quantile(draws, tail)), "ci_high": float(np.quantile(draws, 1.0 - tail)),
            "n_queries": int(sum(len(values[f]) for f in values))}


def verdict(published: float, low: float, high: float) -> str:
    if np.isnan(published):
        return ""
    if published > high:
        return "below"
    if published < low:
        return "above"
    return "reproduced"


def claim_verdict(low: float, high: float) -> str:
    if low > 0:
        return "reproduced"
    if high < 0:
        return "reversed"
    return "no difference"


@dataclass(frozen=True)
class Cell:
    """One published number of a paper's table, and our system and metric for it."""

    paper: str
    study: str
    row: str
    column: str
    system: str
    metric: str
    published: float
    learned: bool = True


@dataclass(frozen=True)
class Claim:
    """A paper's statement that one system ranks better than another on a metric."""

    paper: str
    study: str
    claim: str
    better: str
    worse: str
    metric: str


def score_cell(cell: Cell, folds: dict[int, FoldScores], n_resamples: int, seed: int,
               confidence: float, convention: dict | str | None = None) -> tuple[dict, list[dict]]:
    """The scorecard row of a cell, and one row per evaluation convention that can move it.
    ``convention``: the study's ``paper.convention`` (e.g. ``letor3``, LETOR's own script for its
    baselines), under which "ours" is scored as the paper table scores it; each variant is one
    choice away from it."""
    base = conventions.resolve(convention) if convention else {}
    variants, ours_values = [], None
    for name in conventions.moves(cell.metric):
        per_fold = query_values(folds, cell.metric, {**base, **conventions.VARIANTS[name]})
        flat = np.concatenate([v.to_numpy() for v in per_fold.values()])
        if name == "ours":
            ours_values = flat
        # a convention that changes no query, or leaves no query any credit (no label reaches
        # its threshold, e.g. binarised data and "relevant = label 2"), explains nothing
        elif np.allclose(flat, ours_values, rtol=0, atol=1e-12) or not flat.any():
            continue
        s = summarise({f: v.to_numpy() for f, v in per_fold.items()}, n_resamples, seed, confidence)
        variants.append({"paper": cell.paper, "study": cell.study, "row": cell.row, "column": cell.column,
                         "system": cell.system, "metric": cell.metric, "convention": name,
                         "published": cell.published, **s, "verdict": verdict(cell.published, s["ci_low"], s["ci_high"])})
    ours = variants[0]  # "ours" comes first
    for v in variants:
        v["moves"] = v["ours"] - ours["ours"]
        v["gap"] = v["ours"] - cell.published
    # the convention closest to the paper, preferring one whose interval holds the published
    # number; none when no convention comes closer than ours
    closer = [v for v in variants[1:] if abs(v["gap"]) < abs(ours["gap"])]
    closest = min(closer, key=lambda v: (v["verdict"] != "reproduced", abs(v["gap"])), default=None)
    row = {"kind": "cell", "paper": cell.paper, "study": cell.study, "row": cell.row, "column": cell.column,
           "system": cell.system, "metric": cell.metric, "published": cell.published,
           **{k: ours[k] for k in ("ours", "ours_std", "ci_low", "ci_high", "n_queries")},
           "diff": ours["ours"] - cell.published, "verdict": ours["verdict"],
           "closest_convention": closest["convention"] if closest else "none closer",
           "closest_value": closest["ours"] if closest else np.nan,
           "closest_verdict": closest["verdict"] if closest else "", "learned": cell.learned}
    return row, variants


def not_run(cell: Cell) -> dict:
    """The row of a cell whose system the study does not run (a method the paper only quotes)."""
    return {"kind": "cell", "paper": cell.paper, "study": cell.study, "row": cell.row, "column": cell.column,
            "system": cell.system, "metric": cell.metric, "published": cell.published, "ours": np.nan,
            "ours_std": np.nan, "ci_low": np.nan, "ci_high": np.nan, "diff": np.nan, "verdict": "not run",
            "closest_convention": "", "closest_value": np.nan, "closest_verdict": "", "n_queries": 0,
            "learned": True}


def score_claim(claim: Claim, better: dict[int, FoldScores], worse: dict[int, FoldScores], n_resamples: int,
                seed: int, confidence: float) -> dict:
    """The scorecard row of a claim: the paired difference better - worse over common test queries."""
    a, b = query_values(better, claim.metric, {}), query_values(worse, claim.metric, {})
    diffs = {}
    for fold in sorted(set(a) & set(b)):
        common = a[fold].index.intersection(b[fold].index)
        if len(common):
            diffs[fold] = (a[fold].loc[common] - b[fold].loc[common]).to_numpy()
    if not diffs:
        raise ValueError(f"scorecard: claim {claim.claim!r} ({claim.better} vs {claim.worse}): no common test queries")
    s = summarise(diffs, n_resamples, seed, confidence)
    return {"kind": "claim", "paper": claim.paper, "study": claim.study, "row": claim.claim, "column": claim.metric,
            "system": f"{claim.better} - {claim.worse}", "metric": claim.metric, "published": np.nan,
            "ours": s["ours"], "ours_std": s["ours_std"], "ci_low": s["ci_low"], "ci_high": s["ci_high"],
            "diff": s["ours"], "verdict": claim_verdict(s["ci_low"], s["ci_high"]), "closest_convention": "",
            "closest_value": np.nan, "closest_verdict": "", "n_queries": s["n_queries"], "learned": True}


BEYOND_COLUMNS = ["paper", "study", "column", "metric", "paper_best_row", "paper_best", "paper_best_system",
                  "paper_best_ours", "our_best_system", "our_best", "diff", "p_rand", "n_queries"]


def beyond(card: pd.DataFrame, per_query: dict[tuple[str, str], pd.DataFrame], learned: dict[tuple[str, str], bool],
           n_resamples: int, seed: int) -> pd.DataFrame:
    """For each published column (paper, column) of ``card``: the paper's best row and our run of
    it, beside the best system we have under the same study (so on the same test queries), with a
    paired sign-flip randomization test of the two over their common queries.
    ``per_query[(study, system)]``: that system's test metrics per query (``fold``, ``qid`` and one
    column per metric); ``learned``: whether every fold of it learned (only those compete)."""
    rows = []
    cells = card[(card["kind"] == "cell") & (card["verdict"] != "not run")]
    for (paper, study, column), part in cells.groupby(["paper", "study", "column"], sort=False):
        best_cell = part.loc[part["published"].idxmax()]
        metric = best_cell["metric"]
        ours = {system: frame.set_index(["fold", "qid"])[metric]
                for (s, system), frame in per_query.items() if s == study and metric in frame and learned[(s, system)]}
        if best_cell["system"] not in ours:
            continue
        means = {system: v.groupby(level="fold").mean().mean() for system, v in ours.items()}
        top = max(means, key=means.get)
        a, b = ours[top].align(ours[best_cell["system"]], join="inner")
        rows.append({"paper": paper, "study": study, "column": column, "metric": metric,
                     "paper_best_row": best_cell["row"], "paper_best": best_cell["published"],
                     "paper_best_system": best_cell["system"], "paper_best_ours": means[best_cell["system"]],
                     "our_best_system": top, "our_best": means[top], "diff": means[top] - means[best_cell["system"]],
                     "p_rand": (randomization_test(a.to_numpy(), b.to_numpy(), n_resamples, seed)
                                if top != best_cell["system"] else np.nan),
                     "n_queries": len(a)})
    return pd.DataFrame(rows, columns=BEYOND_COLUMNS)


def beyond_display(table: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "paper": table["paper"], "column": table["column"],
        "paper's best (published)": table["paper_best_row"] + " " + [_fmt(v) for v in table["paper_best"]],
        "our run of it": table["paper_best_system"] + " " + [_fmt(v) for v in table["paper_best_ours"]],
        "our best system": table["our_best_system"] + " " + [_fmt(v) for v in table["our_best"]],
        "difference": [_fmt(v, signed=True) for v in table["diff"]],
        "p (paired randomization)": ["–" if np.isnan(v) else f"{v:.4f}" for v in table["p_rand"]],
    })


BEYOND_NOTE = ("Beyond matching: per published column, the paper's best row and our run of it beside the best "
               "system of the same study (same protocol and test queries; systems that did not learn in some "
               "fold left out); p: two-sided paired sign-flip randomization test over the common test queries, "
               "not adjusted for the choice of the best system, so read it as optimistic.")


PROTOCOL_COLUMNS = ["closest_protocol", "protocol_value", "protocol_verdict"]


def with_protocols(card: pd.DataFrame, explained: pd.DataFrame) -> pd.DataFrame:
    """The card with, per cell the protocol forensics reran (rankstudy.reporting.forensics.explain),
    the protocol variant closest to the paper, its number and verdict ("" where not rerun)."""
    keys = ["study", "row", "column"]
    found = explained.set_index(keys)[["closest", "closest_value", "closest_verdict"]]
    found.columns = PROTOCOL_COLUMNS
    out = card.drop(columns=[c for c in PROTOCOL_COLUMNS if c in card.columns]).join(found, on=keys)
    out["closest_protocol"] = out["closest_protocol"].fillna("")
    out["protocol_verdict"] = out["protocol_verdict"].fillna("")
    return out


def summary_line(card: pd.DataFrame) -> str:
    """"N of M cells reproduced ..." over cells and claims."""
    cells = card[(card["kind"] == "cell") & (card["verdict"] != "not run")]
    claims = card[card["kind"] == "claim"]
    not_run_ = int((card["verdict"] == "not run").sum())
    line = (f"{int((cells['verdict'] == 'reproduced').sum())} of {len(cells)} published cells reproduced "
            f"(the paper's number inside our {INTERVAL.split(' over')[0]} interval); "
            f"{int((cells['verdict'] == 'below').sum())} below the paper, {int((cells['verdict'] == 'above').sum())} above")
    if len(cells):
        explained = int(((cells["verdict"] != "reproduced") & (cells["closest_verdict"] == "reproduced")).sum())
        line += f"; {explained} more reproduced under an evaluation convention the paper may have used"
    if "protocol_verdict" in card.columns:
        rerun = cells[cells["closest_protocol"] != ""]
        by_protocol = int(((rerun["verdict"] != "reproduced") & (rerun["protocol_verdict"] == "reproduced")).sum())
        line += (f"; of the {len(rerun)} cells rerun under protocol variants, {by_protocol} more reproduced under "
                 f"one (results/tables/forensics.md)")
    if not_run_:
        line += f" ({not_run_} more cells of methods we do not run)"
    if len(claims):
        line += (f". {int((claims['verdict'] == 'reproduced').sum())} of {len(claims)} claims of an order reproduced"
                 f" ({int((claims['verdict'] == 'no difference').sum())} no difference, "
                 f"{int((claims['verdict'] == 'reversed').sum())} reversed)")
    return line + "."


def _fmt(v: float, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    return f"{v:+.4f}" if signed else f"{v:.4f}"


def display(card: pd.DataFrame) -> pd.DataFrame:
    """The scorecard as text columns, one row per cell or claim."""
    out = pd.DataFrame({
        "paper": card["paper"], "cell": card["row"] + " / " + card["column"], "ours (system, metric)":
            card["system"] + ", " + card["metric"],
        "published": [_fmt(v) for v in card["published"]],
        "ours ± std over folds": [f"{_fmt(m)} ± {_fmt(s)}" + ("" if learned else " ⚠")
                                  for m, s, learned in zip(card["ours"], card["ours_std"], card["learned"])],
        "95% interval": [f"[{_fmt(lo)}, {_fmt(hi)}]" for lo, hi in zip(card["ci_low"], card["ci_high"])],
        "difference": [_fmt(v, signed=True) for v in card["diff"]],
        "verdict": card["verdict"],
        "closest convention": [f"{c}: {_fmt(v)} ({cv})" if cv else c for c, v, cv in
                               zip(card["closest_convention"], card["closest_value"], card["closest_verdict"])],
    })
    if "closest_protocol" in card.columns:
        out["closest protocol variant"] = [f"{c}: {_fmt(v)} ({pv})" if pv else c for c, v, pv in
                                           zip(card["closest_protocol"], card["protocol_value"], card["protocol_verdict"])]
    return out


def notes() -> str:
    return (f"Ours: mean over folds of the per-fold mean over test queries (as in the comparison tables); "
            f"interval: {INTERVAL}. For a claim (a paper's statement that one system is better), ours is the "
            f"mean paired difference better - worse over common test queries, and the claim is reproduced when "
            f"its interval lies above 0. Closest convention: the evaluation convention (NDCG's gain and discount, "
            f"the relevant label; rankstudy.evaluation.conventions) that brings our number nearest the paper, "
            f"applied to the same written scores without retraining (scorecard.conventions.csv lists every "
            f"one). Closest protocol variant (when the protocol forensics ran): the rerun of the study with one open "
            f"choice of its protocol changed whose number is nearest the paper (forensics.md says how far each "
            f"choice moves the cell). ⚠: the system did not learn in some fold (its summary.json says why).")


def to_markdown(card: pd.DataFrame, title: str, beyond_table: pd.DataFrame | None = None) -> str:
    table = display(card).to_markdown(index=False)
    text = f"# {title}\n\n**{summary_line(card)}**\n\n{table}\n\n{notes()}\n"
    if beyond_table is not None and len(beyond_table):
        text += f"\n## Beyond matching\n\n{beyond_display(beyond_table).to_markdown(index=False)}\n\n{BEYOND_NOTE}\n"
    return text


def to_html(card: pd.DataFrame, title: str, beyond_table: pd.DataFrame | None = None) -> str:
    colours = {"reproduced": "#d8f0d8", "below": "#f6dcdc", "above": "#dde6f6", "no difference": "#f3ecd2",
               "reversed": "#f6dcdc"}
    frame = display(card)
    body = frame.style.hide(axis="index").apply(
        lambda col: [f"background-color: {colours.get(v, '')}" for v in col], subset=["verdict"]).set_table_styles(
        [{"selector": "td, th", "props": "padding: 2px 8px; border-bottom: 1px solid #ddd; vertical-align: top;"},
         {"selector": "", "props": "border-collapse: collapse; font-family: sans-serif; font-size: 13px;"}]).to_html()
    text = (f"<h2>{html.escape(title)}</h2>\n<p><b>{html.escape(summary_line(card))}</b></p>\n{body}\n"
            f"<p>{html.escape(notes())}</p>\n")
    if beyond_table is not None and len(beyond_table):
        text += (f"<h3>Beyond matching</h3>\n{beyond_display(beyond_table).to_html(index=False)}\n"
                 f"<p>{html.escape(BEYOND_NOTE)}</p>\n")
    return text
