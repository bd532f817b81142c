"""The leaderboard of a study: every system ranked by one metric on each data set, and across them.

Pure functions over the files the tables job writes per data set (``rankstudy.reporting.tables``,
``timing``): the long-form numbers (``{dataset}.csv``: one row per metric and system, with
``mean``, ``std``, ``n_folds``, ``learned``), the tested pairs (``{dataset}.pairs.csv``, from
``report.compare: all_pairs``) and the training times (``{dataset}.timing.csv``).

Per data set (:func:`dataset_board`) the systems are ranked by their mean over folds (rank 1
the highest; tied means share the average of their ranks, as in Demsar's mean ranks). The
*top group* is the systems the all-pairs test cannot tell from the best: a system is in it
unless a system with the highest mean beats it (the pair's ``winner``: Holm-adjusted over all
pairs of the metric, by the test the tables used). Across data sets (:func:`across_datasets`)
each system gets its mean rank over the data sets it ran on, how many those are, and in how many
it is in the top group; systems are ordered by mean rank, then by top-group count, then by name.
A system missing on a data set is left out of that data set's ranking (the others are ranked
among themselves) and its mean rank is over fewer data sets, which the ``n_datasets`` column says.

Beside the top group, each data set's *power*: per system the minimum detectable difference of
its pair with the best system (``mdd``, ``mdd_family`` at Holm's strictest level alpha / m), and
the data set's MDD (``dataset_mdd``: :func:`rankstudy.reporting.power.dataset_power`, the median
over every tested pair, the same number the data set's table and the heat map show), so that "24
in the top group" reads as "this data set cannot separate differences below x".
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.reporting import power
from rankstudy.reporting.marks import NOT_LEARNED_MARK, TIED_MARK
from rankstudy.reporting.tables import markdown_escape, mean_std_text
from rankstudy.util import atomic

# One row per (data set, system) of leaderboard.csv; the last three are the system's figures
# across data sets, repeated on each of its rows.
COLUMNS = ("dataset", "system", "metric", "rank", "mean", "std", "n_folds", "best", "top_group", "learned",
           "tied_scores", "train_seconds", "mdd", "mdd_family", "dataset_mdd", "dataset_mdd_family", "mean_rank",
           "n_datasets",
           "n_top_group")
# with default and tuned twins, each tuned system's row also has (tuning_gains)
# pooled_default, pooled_tuned: the pooled means the gain is computed from (tuning_gains' default, tuned)
GAIN_COLUMNS = ("tuned_from", "pooled_default", "pooled_tuned", "gain", "gain_lo", "gain_hi", "gain_level", "gain_test", "gain_sig",
                "tuning_cpu_seconds", "tuning_trials", "tuning_note")
_BEST_TOLERANCE = 1e-12  # relative, as the tables' "best": rounding noise does not break a tie


def _bool(values) -> pd.Series:
    """Booleans as written to and read back from CSV ('True'/'False' strings or bools)."""
    series = pd.Series(values)
    return series.map(lambda v: v if isinstance(v, (bool, np.bool_)) else str(v).strip().lower() == "true").astype(bool)


def top_group(means: pd.Series, pairs: pd.DataFrame, metric: str) -> pd.Series:
    """Per system (the index of ``means``): True unless a system with the highest mean beats it
    significantly on ``metric`` (``pairs``' ``winner``). A best system is always in the group.
    Raises ValueError when a pair of a best system with another is not in ``pairs``: the
    leaderboard needs every pair tested (``report.compare: all_pairs``)."""
    means = means.astype(float)
    top = means.max()
    if np.isnan(top):
        return pd.Series(False, index=means.index)
    best = set(means.index[means >= top - _BEST_TOLERANCE * max(1.0, abs(top))])
    part = pairs[pairs["metric"] == metric]
    winner = {}
    for system, other, won in zip(part["system"], part["other"], part["winner"].fillna("")):
        winner[frozenset((system, other))] = won
    beaten = set()
    for b in best:
        for s in means.index:
            if s == b:
                continue
            key = frozenset((b, s))
            if key not in winner:
                raise ValueError(f"no tested pair of {b!r} and {s!r} on {metric} in the pairs file: the "
                                 f"leaderboard needs every pair of systems (report.compare: all_pairs)")
            if winner[key] == b:
                beaten.add(s)
    return pd.Series([s not in beaten for s in means.index], index=means.index)


def against_best(board: pd.DataFrame, pairs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per system of ``board`` (best first), the ``mdd`` and ``mdd_family`` of its pair with the
    best system (the first of tied ones) on ``metric``; NaN for the best itself and where the
    pairs file has no such column (written before it did)."""
    out = pd.DataFrame({"mdd": np.nan, "mdd_family": np.nan}, index=board["system"])
    if not {"mdd", "mdd_family"} <= set(pairs.columns) or board.empty:
        return out
    best = board["system"].iloc[0]
    part = pairs[(pairs["metric"] == metric) & ((pairs["system"] == best) | (pairs["other"] == best))]
    other = np.where(part["system"] == best, part["other"], part["system"])
    found = part[["mdd", "mdd_family"]].astype(float).set_axis(other)
    found = found[~found.index.duplicated()]
    out.update(found.reindex(out.index))
    return out


def dataset_board(numbers: pd.DataFrame, pairs: pd.DataFrame, timing: pd.DataFrame | None, metric: str) -> pd.DataFrame:
    """One data set's systems ranked by ``metric``: columns ``system``, ``rank``, ``mean``, ``std``,
    ``n_folds``, ``best``, ``top_group``, ``learned``, ``train_seconds`` (the train job's mean over
    folds, NaN without a timing row), ``mdd`` and ``mdd_family`` (of the pair with the best system,
    :func:`against_best`), best first (ties in the tables' order). ``numbers`` is the tables' long
    CSV, ``pairs`` its pairs CSV, ``timing`` its timing CSV."""
    part = numbers[numbers["metric"] == metric]
    if part.empty:
        raise ValueError(f"metric {metric!r} is not in the tables (they have {sorted(set(numbers['metric']))}): "
                         f"report.leaderboard.metric must be one of report.metrics")
    board = pd.DataFrame({"system": part["system"].astype(str).to_numpy(),
                          "mean": part["mean"].astype(float).to_numpy(),
                          "std": part["std"].astype(float).to_numpy(),
                          "n_folds": part["n_folds"].to_numpy(),
                          "learned": _bool(part["learned"]).to_numpy() if "learned" in part else True,
                          # test scores all tied in most queries of some fold (tables' TIED_MARK)
                          "tied_scores": _bool(part["tied_scores"]).to_numpy() if "tied_scores" in part else False})
    if board["system"].duplicated().any():
        raise ValueError(f"system(s) {sorted(set(board['system'][board['system'].duplicated()]))} appear twice "
                         f"for {metric} in the tables")
    board["rank"] = board["mean"].rank(ascending=False, method="average")
    board["best"] = board["rank"] == board["rank"].min()
    board["top_group"] = top_group(board.set_index("system")["mean"], pairs, metric).to_numpy()
    seconds = {} if timing is None else dict(zip(timing["system"].astype(str), timing["train_job_seconds"]))
    board["train_seconds"] = board["system"].map(seconds).astype(float)
    board = board.sort_values("rank", kind="stable").reset_index(drop=True)
    found = against_best(board, pairs, metric)
    board["mdd"], board["mdd_family"] = found["mdd"].to_numpy(), found["mdd_family"].to_numpy()
    headline = power.dataset_power(pairs, metric)  # the data set's, as its table shows it
    board["dataset_mdd"], board["dataset_mdd_family"] = headline.mdd, headline.mdd_family
    return board[["system", "rank", "mean", "std", "n_folds", "best", "top_group", "learned", "tied_scores",
                  "train_seconds", "mdd", "mdd_family", "dataset_mdd", "dataset_mdd_family"]]


def dataset_power(board: pd.DataFrame) -> power.DatasetPower:
    """The data set's MDD as :func:`dataset_board` read it from the pairs (NaN for a board without it)."""
    def first(column):
        return float(board[column].iloc[0]) if column in board and len(board) else float("nan")
    return power.DatasetPower(first("dataset_mdd"), first("dataset_mdd_family"), 0)


TUNED_SUFFIX = "-tuned"  # rankstudy.pipeline.tuned's twins: NAME and NAME-tuned


def _method_and_featureset(system: str) -> tuple[str, str]:
    """"ranknet-tuned [first]" -> ("ranknet-tuned", " [first]") (rankstudy.pipeline.layout.system_label)."""
    method, bracket, rest = system.partition(" [")
    return method, (bracket + rest) if bracket else ""


def tuning_gains(board: pd.DataFrame, pairs: pd.DataFrame, timing: pd.DataFrame | None, metric: str,
                 notes: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Per system run both untuned (``NAME``) and tuned (``NAME-tuned``, tune.variants [default,
    tuned]), from the pair's row of the pairs file: its ``default`` and ``tuned`` pooled means (each
    one's mean over the pair's test queries, all folds pooled: ``mean_other`` / ``mean_system``),
    the ``gain`` = tuned - default, and the pair's t-interval ``gain_lo``..``gain_hi`` at
    ``gain_level`` (the level Holm's step-down tested the pair at: it excludes 0 exactly where the
    Holm-adjusted paired t-test has p < alpha); ``gain_test`` (the test that decides the board's
    pairs, the randomization test) and ``gain_sig`` (its Holm-adjusted decision), ``tuning_cpu_seconds``
    and ``tuning_trials`` (mean over folds), ``tuning_note`` (``notes``: why fewer trials ran, or more
    than the cap was spent). In the board's order of the tuned systems; empty without twins.
    ValueError for a pairs file without the pooled means (written before them)."""
    columns = ["system", "tuned_system", "default", "tuned", "gain", "gain_lo", "gain_hi", "gain_level", "gain_test",
               "gain_sig", "tuning_cpu_seconds", "tuning_trials", "tuning_note"]
    names = set(board["system"])
    part = pairs[pairs["metric"] == metric] if "metric" in pairs else pairs.iloc[0:0]
    def spent(column):
        return ({} if timing is None or column not in timing
                else dict(zip(timing["system"].astype(str), timing[column].astype(float))))
    cpu, trials = spent("tuning_cpu_seconds"), spent("tuning_trials")
    rows = []
    for tuned in board["system"]:
        method, featureset = _method_and_featureset(tuned)
        base = method[: -len(TUNED_SUFFIX)] + featureset if method.endswith(TUNED_SUFFIX) else None
        if base is None or base not in names:
            continue
        if not {"mean_system", "mean_other"} <= set(pairs.columns):
            raise ValueError("the pairs file has no mean_system / mean_other (the pooled means the gain from tuning "
                             "is computed from): it was written by an older rankstudy; rerun its tables job "
                             "(snakemake --forcerun tables)")
        row = {"system": base, "tuned_system": tuned, "default": np.nan, "tuned": np.nan, "gain": np.nan,
               "gain_lo": np.nan, "gain_hi": np.nan, "gain_level": np.nan, "gain_test": "", "gain_sig": False,
               "tuning_cpu_seconds": cpu.get(tuned, np.nan), "tuning_trials": trials.get(tuned, np.nan),
               "tuning_note": (notes or {}).get(tuned, "")}
        pair = part[((part["system"] == tuned) & (part["other"] == base))
                    | ((part["system"] == base) & (part["other"] == tuned))]
        if len(pair):  # the board has every pair (top_group checks): none only for a hand-made file
            found = pair.iloc[0]
            forward = found["system"] == tuned  # the pairs' means and diff are system's, system - other
            tuned_mean, default_mean = ((float(found["mean_system"]), float(found["mean_other"])) if forward
                                        else (float(found["mean_other"]), float(found["mean_system"])))
            sign = 1.0 if forward else -1.0
            lo, hi = sign * float(found["diff_lo"]), sign * float(found["diff_hi"])
            test = str(found.get("decided_by", "rand"))
            row.update(default=default_mean, tuned=tuned_mean, gain=tuned_mean - default_mean,
                       gain_lo=min(lo, hi), gain_hi=max(lo, hi), gain_level=float(found.get("ci_level", np.nan)),
                       gain_test=test, gain_sig=str(found.get(f"sig_{test}", "False")) == "True")
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def across_datasets(boards: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per system (over every data set's board): ``mean_rank`` over the data sets it ran on,
    ``n_datasets`` (how many), ``n_top_group`` (in how many it is in the top group) and
    ``learned`` (False if it did not learn on some data set); ordered by mean rank, then more
    top groups, then system name."""
    if not boards:
        raise ValueError("no data set to rank")
    long = pd.concat([b.assign(dataset=d) for d, b in boards.items()], ignore_index=True)
    if "tied_scores" not in long:
        long["tied_scores"] = False
    out = long.groupby("system", sort=False).agg(mean_rank=("rank", "mean"), n_datasets=("dataset", "nunique"),
                                                 n_top_group=("top_group", "sum"), learned=("learned", "all"),
                                                 tied_scores=("tied_scores", "any"))
    out["n_top_group"] = out["n_top_group"].astype(int)
    out = out.reset_index().sort_values(["mean_rank", "n_top_group", "system"], ascending=[True, False, True],
                                        kind="stable")
    return out.reset_index(drop=True)


def leaderboard_frame(boards: Mapping[str, pd.DataFrame], metric: str,
                      gains: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """The CSV: one row per (data set, system) in :data:`COLUMNS`, data sets in the given order,
    each ranked best first, with the system's figures across data sets joined on; with ``gains``
    (:func:`tuning_gains` per data set) the :data:`GAIN_COLUMNS` too, on each tuned system's row."""
    overall = across_datasets(boards).set_index("system")[["mean_rank", "n_datasets", "n_top_group"]]
    rows = [b.assign(dataset=d, metric=metric, dataset_mdd=dataset_power(b).mdd,
                     dataset_mdd_family=dataset_power(b).mdd_family) for d, b in boards.items()]
    frame = pd.concat(rows, ignore_index=True).join(overall, on="system")
    gains = [g.assign(dataset=d) for d, g in (gains or {}).items() if len(g)]
    if not gains:
        return frame[list(COLUMNS)]
    gains = (pd.concat(gains, ignore_index=True).rename(columns={"system": "tuned_from"})
             .rename(columns={"tuned_system": "system", "default": "pooled_default", "tuned": "pooled_tuned"}))
    frame = frame.merge(gains[["dataset", "system", *GAIN_COLUMNS]], on=["dataset", "system"], how="left")
    return frame[[*COLUMNS, *GAIN_COLUMNS]]


# --------------------------------------------------------------------------- documents


def _seconds_text(seconds: float) -> str:
    return "–" if np.isnan(seconds) else f"{seconds:.1f}"


def _rank_text(rank: float) -> str:
    return f"{rank:g}" if float(rank).is_integer() else f"{rank:.1f}"


def _name(system: str, learned: bool, tied: bool = False) -> str:
    return " ".join([system, *([NOT_LEARNED_MARK] if not learned else []), *([TIED_MARK] if tied else [])])


def dataset_rows(board: pd.DataFrame) -> list[list[str]]:
    """Plain texts of one data set's table: rank, system (⚠ if it did not learn), mean ± std,
    top group (●), the minimum detectable difference against the best, train seconds."""
    return [[_rank_text(r.rank), _name(r.system, bool(r.learned), bool(r.tied_scores)), mean_std_text(r.mean, r.std),
             "●" if r.top_group else "", power.mdd_text(r.mdd), _seconds_text(r.train_seconds)]
            for r in board.itertuples()]


def power_line(board: pd.DataFrame, metric: str) -> str:
    """The data set's line beside its table: the top group's size and what the data set can separate."""
    text = f"{int(board['top_group'].sum())} of {len(board)} systems in the top group."
    headline = power.headline(dataset_power(board), metric)
    return f"{text} {headline}" if headline else text


def overall_rows(overall: pd.DataFrame, datasets: Sequence[str]) -> list[list[str]]:
    return [[f"{r.mean_rank:.2f}", _name(r.system, bool(r.learned), bool(r.tied_scores)),
             f"{r.n_top_group} of {r.n_datasets}"]
            for r in overall.itertuples()]


DATASET_HEADER = ["rank", "system", "{metric} (mean ± std)", "top group", "MDD vs best", "train (s)"]
GAINS_HEADER = ["system", "default", "tuned", "gain from tuning", "t-interval at its Holm level", "trials",
                "tuning (CPU-s a fold)"]
DISAGREE_MARK = "≠"  # the gain's t-interval and the randomization test's decision disagree


def level_text(level: float) -> str:
    """A confidence level with the digits that tell it from its neighbours: 95.0%, 99.64%, 99.9972%."""
    if np.isnan(level):
        return "–"
    rest = 100.0 * (1.0 - level)
    decimals = 1 if rest <= 0 else max(1, int(-np.floor(np.log10(rest))) + 1)
    return f"{100.0 * level:.{decimals}f}%"


def _signed(value: float) -> str:
    """+0.0123; a value that rounds to 0 is +0.0000 (a rounding noise of -1e-17 is no loss)."""
    return f"{round(value, 4) + 0.0:+.4f}"


def interval_disagrees(gains: pd.DataFrame) -> pd.Series:
    """Per row, whether the t-interval's excluding 0 and the deciding test's verdict differ."""
    excludes = (gains["gain_lo"] > 0) | (gains["gain_hi"] < 0)
    return gains["gain_lo"].notna() & (excludes != gains["gain_sig"].astype(bool))


def gains_rows(gains: pd.DataFrame) -> list[list[str]]:
    """Plain texts of the default-vs-tuned table: the system, both pooled means, the gain (▲/▼
    where the Holm-adjusted randomization test finds it), its t-interval with its level (≠ where
    the two disagree), the trials run and the tuning's CPU-seconds."""
    rows = []
    for r, disagrees in zip(gains.itertuples(), interval_disagrees(gains)):
        mark = ("▲" if r.gain > 0 else "▼") if r.gain_sig else ""
        interval = ("–" if np.isnan(r.gain_lo) else f"[{_signed(r.gain_lo)}, {_signed(r.gain_hi)}] at "
                    f"{level_text(r.gain_level)}" + (f" {DISAGREE_MARK}" if disagrees else ""))
        rows.append([r.system, "–" if np.isnan(r.default) else f"{r.default:.4f}",
                     "–" if np.isnan(r.tuned) else f"{r.tuned:.4f}",
                     "–" if np.isnan(r.gain) else f"{_signed(r.gain)} {mark}".rstrip(), interval,
                     "–" if np.isnan(r.tuning_trials) else f"{r.tuning_trials:.3g}", _seconds_text(r.tuning_cpu_seconds)])
    return rows


def gains_line(gains: pd.DataFrame) -> str:
    better, worse = int(((gains["gain"] > 0) & gains["gain_sig"]).sum()), int(((gains["gain"] < 0) & gains["gain_sig"]).sum())
    return (f"Default and tuned side by side: tuning changed {better + worse} of {len(gains)} systems significantly "
            f"({better} better, {worse} worse, by the randomization test); median gain {gains['gain'].median():+.4f}.")


def notes_line(gains: pd.DataFrame) -> str:
    """Under the default-and-tuned table: why a tuned system ran fewer trials than its budget, or
    spent more CPU-seconds than its cap (:func:`rankstudy.reporting.budget.system_notes`); ''."""
    said = [f"{r.tuned_system}: {r.tuning_note}" for r in gains.itertuples() if isinstance(r.tuning_note, str) and r.tuning_note]
    return ("Fewer trials than the budget, or more CPU-seconds than the cap (no trial starts once the cap is spent, "
            "but the one running then finishes): " + "; ".join(said) + ".") if said else ""


OVERALL_HEADER = ["mean rank", "system", "in the top group"]


def legend(metric: str, alpha: float, folds: Sequence[int], any_missing: bool, any_not_learned: bool,
           any_tied: bool = False, any_tuned: bool = False, defaults: str = "") -> str:
    """The page's legend; ``defaults``: what "default" means for its methods
    (:func:`rankstudy.reporting.defaults.defaults_sentence`)."""
    text = (f"Per data set: systems ranked by test {metric}, mean ± std over folds {list(folds)} of the per-fold "
            f"means (rank 1 the highest, ties share the mean of their ranks). Top group (●): the systems the "
            f"all-pairs randomization test over paired test queries cannot tell from the best (Holm-corrected "
            f"over all pairs of systems, p < {alpha:g}; the data set's .pairs.csv has every pair). "
            f"{power.definition(alpha)}. MDD vs best: the MDD of the system's pair with the best system; the line "
            f"above each data set's table gives the data set's MDD, as its table and the heat map do. Train: "
            f"seconds of the train job (every hyper-parameter candidate), mean over folds. Across data sets: "
            f"each system's mean rank over the data sets it ran on, and in how many of them it is in the top "
            f"group.")
    if any_missing:
        text += " A system that did not run on a data set is left out of that data set's ranking."
    if any_not_learned:
        text += (f" {NOT_LEARNED_MARK}: in some fold the chosen model did not learn (its training objective did "
                 f"not fall clearly below its start, or it ranked no better than random; the data set's table "
                 f"says which fold and why).")
    if any_tuned:
        text += (f" Default and tuned: each system's untuned run beside its NAME-tuned twin, tuned with the budget "
                 f"stated above on the validation split (docs/tuning.md). Default, tuned and gain are pooled means: "
                 f"each system's mean over the test queries of all folds together that the pair shares (not the "
                 f"mean over folds ranked above), so the gain is tuned - default. Its interval is the paired "
                 f"t-interval at the level Holm's step-down tested the pair at (over all pairs of systems, so at "
                 f"least {level_text(1 - alpha)}; printed beside it): it excludes 0 exactly where the Holm-adjusted "
                 f"paired t-test has p < {alpha:g}. ▲/▼: the Holm-adjusted randomization test (the top group's test) "
                 f"finds the gain, p < {alpha:g}; {DISAGREE_MARK}: the t-interval and the randomization test "
                 f"disagree on it (the two tests differ near the threshold). Trials and tuning: the trials run and "
                 f"their CPU-seconds per fold (mean over folds); below the table, why a method ran fewer trials than "
                 f"its budget or spent more than its cap.")
    if defaults:
        text += " " + defaults
    if any_tied:
        text += (f" {TIED_MARK}: in some fold the test scores were all tied in most queries, so the ranking is the "
                 f"input order and its score measures the file's order, not the model (the data set's table says "
                 f"which fold).")
    return text


def markdown_document(boards: Mapping[str, pd.DataFrame], metric: str, caption: str, legend_text: str,
                      gains: Mapping[str, pd.DataFrame] | None = None, budget: str = "") -> str:
    def grid(header, rows, align):
        frame = pd.DataFrame([[markdown_escape(c) for c in row] for row in rows],
                             columns=[markdown_escape(h) for h in header])
        return frame.to_markdown(index=False, colalign=align, disable_numparse=True)  # keep our number formats

    overall = across_datasets(boards)
    parts = [markdown_escape(caption), *([markdown_escape(budget)] if budget else []), "## Across data sets",
             grid(OVERALL_HEADER, overall_rows(overall, list(boards)), ["right", "left", "right"])]
    header = [h.format(metric=metric) for h in DATASET_HEADER]
    for dataset, board in boards.items():
        parts += [f"## {markdown_escape(dataset)}", markdown_escape(power_line(board, metric)),
                  grid(header, dataset_rows(board), ["right", "left", "right", "center", "right", "right"])]
        if gains is not None and len(gains.get(dataset, ())):
            parts += [markdown_escape(gains_line(gains[dataset])),
                      grid(GAINS_HEADER, gains_rows(gains[dataset]), ["left"] + ["right"] * (len(GAINS_HEADER) - 1))]
            if notes := notes_line(gains[dataset]):
                parts.append(markdown_escape(notes))
    parts.append(markdown_escape(legend_text))
    return "\n\n".join(parts) + "\n"


HTML_STYLE = """<style>
body { font-family: sans-serif; }
table.leaderboard { border-collapse: collapse; margin: 0.5em 0 1.2em; font-variant-numeric: tabular-nums; }
table.leaderboard th, table.leaderboard td { border: 1px solid #bbb; padding: 0.25em 0.6em; }
table.leaderboard thead th { background: #e8e8e8; }
table.leaderboard td { text-align: right; white-space: nowrap; }
table.leaderboard td.system { text-align: left; }
table.leaderboard tr.top { background: #e6f4ea; }
p.legend, p.caption, p.power { font-size: 90%; max-width: 70em; }
</style>"""


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]], top: Sequence[bool], name_column: int = 1) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for row, in_top in zip(rows, top):
        cells = "".join(f'<td class="system">{html.escape(c)}</td>' if i == name_column else f"<td>{html.escape(c)}</td>"
                        for i, c in enumerate(row))
        attr = ' class="top"' if in_top else ""
        body.append(f"<tr{attr}>{cells}</tr>")
    return f'<table class="leaderboard">\n<thead><tr>{head}</tr></thead>\n<tbody>\n' + "\n".join(body) + "\n</tbody>\n</table>"


def html_document(boards: Mapping[str, pd.DataFrame], metric: str, caption: str, legend_text: str,
                  gains: Mapping[str, pd.DataFrame] | None = None, budget: str = "") -> str:
    overall = across_datasets(boards)
    n = len(boards)
    parts = [f'<p class="caption">{html.escape(caption)}</p>',
             *([f'<p class="caption">{html.escape(budget)}</p>'] if budget else []), "<h2>Across data sets</h2>",
             _html_table(OVERALL_HEADER, overall_rows(overall, list(boards)),
                         [t == n for t in overall["n_top_group"]])]
    header = [h.format(metric=metric) for h in DATASET_HEADER]
    for dataset, board in boards.items():
        parts += [f"<h2>{html.escape(dataset)}</h2>", f'<p class="power">{html.escape(power_line(board, metric))}</p>',
                  _html_table(header, dataset_rows(board), list(board["top_group"]))]
        if gains is not None and len(gains.get(dataset, ())):
            parts += [f'<p class="power">{html.escape(gains_line(gains[dataset]))}</p>',
                      _html_table(GAINS_HEADER, gains_rows(gains[dataset]), [False] * len(gains[dataset]), name_column=0)]
            if notes := notes_line(gains[dataset]):
                parts.append(f'<p class="power">{html.escape(notes)}</p>')
    parts.append(f'<p class="legend">{html.escape(legend_text)}</p>')
    body = "\n".join(parts)
    return ("<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\">"
            f"<title>{html.escape(caption)}</title>\n{HTML_STYLE}\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def write_leaderboard(boards: Mapping[str, pd.DataFrame], metric: str, out_prefix: Path, caption: str, *,
                      alpha: float, folds: Sequence[int], gains: Mapping[str, pd.DataFrame] | None = None,
                      budget: str = "", defaults: str = "") -> list[Path]:
    """``out_prefix`` + ``.csv`` (:func:`leaderboard_frame`), ``.md`` and ``.html``; all rendered
    before any is written. ``gains``: per data set, :func:`tuning_gains` (default and tuned twins);
    ``budget``: the tuning budget's sentence, under the caption
    (:func:`rankstudy.reporting.budget.budget_sentence`); ``defaults``: what "default" means, in
    the legend (:func:`rankstudy.reporting.defaults.defaults_sentence`)."""
    gains = {d: g for d, g in (gains or {}).items() if len(g)}
    frame = leaderboard_frame(boards, metric, gains)
    systems = set(frame["system"])
    any_missing = any(set(b["system"]) != systems for b in boards.values())
    text = legend(metric, alpha, folds, any_missing, not bool(frame["learned"].all()),
                  bool(frame["tied_scores"].any()), bool(gains), defaults)
    documents = {".md": markdown_document(boards, metric, caption, text, gains, budget),
                 ".html": html_document(boards, metric, caption, text, gains, budget)}
    out_prefix = Path(out_prefix)
    written = [atomic.write_csv(frame, out_prefix.with_name(out_prefix.name + ".csv"))]
    for suffix, document in documents.items():
        written.append(atomic.write_text(out_prefix.with_name(out_prefix.name + suffix), document))
    return written


def heatmap_notes(boards: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """Under each data set's name in the heat map: its top group's size and, where known, the data
    set's MDD (:func:`dataset_power`, as its table and the page write it)."""
    notes = {}
    for dataset, board in boards.items():
        mdd = dataset_power(board).mdd
        notes[dataset] = (f"top group {int(board['top_group'].sum())} of {len(board)}"
                          + ("" if np.isnan(mdd) else f"; MDD {power.mdd_text(mdd)}"))
    return notes


def heatmap_frames(boards: Mapping[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The means, ranks and top-group flags as systems (by :func:`across_datasets` order, ⚠ after
    one that did not learn somewhere) x data sets (given order), NaN / False where a system did
    not run: what the heat map draws."""
    overall = across_datasets(boards)
    order = list(overall["system"])
    names = {s: _name(s, bool(learned), bool(tied))
             for s, learned, tied in zip(overall["system"], overall["learned"], overall["tied_scores"])}
    long = pd.concat([b.assign(dataset=d) for d, b in boards.items()], ignore_index=True)

    def wide(column):
        frame = long.pivot(index="system", columns="dataset", values=column).reindex(index=order, columns=list(boards))
        return frame.rename(index=names)

    return wide("mean"), wide("rank"), wide("top_group").fillna(False).astype(bool)
