"""Comparison statistics of systems over the long per-query frame of TEST metrics of one data set
(columns ``system``, ``fold``, ``qid`` and one float column per metric; NaN values, queries
dropped by the no-relevant-document policy, are excluded pairwise).

:func:`comparison_table` has one row per system (baseline first, then input order) and
two-level columns ``(metric, stat)`` with the stats in :data:`STATS`: each system against the
baseline. :func:`all_pairs_comparison` tests every pair of systems instead (``report.compare:
all_pairs``), one row per pair in :data:`PAIR_COLUMNS`. Every metric is taken as
higher-is-better when marking the best system. What the tables show of them, and in which
markup, is :mod:`rankstudy.reporting.tables`'.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from rankstudy.evaluation.learning import MAX_TIED_SHARE
from rankstudy.reporting.power import POWER
from rankstudy.reporting.significance import (holm, holm_consistent_levels, mean_difference_intervals,
                                              minimum_detectable_differences, paired_ttest,
                                              randomization_tests_of_differences)

KEY_COLUMNS = ("system", "fold", "qid")
STATS = (
    "mean",  # mean over folds of the per-fold mean over queries
    "std",  # sample std (ddof=1) over folds of the per-fold means
    "n_folds",  # folds with at least one non-NaN value
    "n_pairs",  # queries matched with the baseline on (fold, qid), both non-NaN
    "pooled_mean",  # mean over those queries (all folds pooled) of the system ...
    "pooled_baseline",  # ... and of the baseline: diff is pooled_mean - pooled_baseline
    "diff",  # mean over those queries of system - baseline
    "diff_lo",  # its t-interval at ci_level, which agrees with p_ttest_holm (holm_consistent_levels)
    "diff_hi",
    "ci_level",  # 1 - alpha p_ttest / p_ttest_holm: excludes 0 exactly where p_ttest_holm < alpha
    "mdd",  # minimum detectable difference: paired t-test at alpha, power POWER, from the differences' sd
    "mdd_family",  # the same at alpha / m (Bonferroni over the m tests, Holm's strictest step)
    "p_ttest",  # raw paired t-test p vs baseline
    "p_rand",  # raw randomization-test p vs baseline
    "p_ttest_holm",  # Holm-adjusted across the non-baseline systems of this metric
    "p_rand_holm",
    "too_few_queries",  # n_pairs < min_queries: no test is taken as significant
    "wins",  # paired queries where the system scores above the baseline (PyTerrier's +)
    "ties",  # ... equal to it
    "losses",  # ... below it (PyTerrier's -)
    "sig_ttest",  # p_ttest_holm < alpha and not too_few_queries
    "sig_rand",  # p_rand_holm < alpha and not too_few_queries
    "direction",  # better / worse than the baseline where a test is significant, else none
    "best",  # highest mean for this metric (ties all marked)
)
# One row per pair of systems and metric (the .pairs.csv file): diff is system - other;
# winner is the significantly better one by the test named in decided_by ('' if neither).
# mean_system and mean_other: each one's mean over the pair's n_pairs queries, all folds pooled.
PAIR_COLUMNS = ("metric", "system", "other", "n_pairs", "wins", "ties", "losses", "mean_system", "mean_other",
                "diff", "diff_lo", "diff_hi",
                "ci_level", "mdd", "mdd_family", "p_ttest", "p_rand", "p_ttest_holm", "p_rand_holm", "too_few_queries",
                "sig_ttest", "sig_rand",
                "winner", "decided_by")
COMPARE_MODES = ("baseline", "all_pairs")
# Fewer paired test queries than this and no significance mark is printed (report.min_queries).
DEFAULT_MIN_QUERIES = 20
# The test whose Holm-adjusted p decides "beats" between all pairs by default: the randomization
# test assumes nothing about the shape of per-query differences (Smucker et al., CIKM 2007).
PAIRS_TEST = "rand"
TEST_NAMES = {"ttest": "paired t-test", "rand": "paired sign-flip randomization test"}
# Relative slack when comparing means for "best", so rounding noise does not break ties.
_BEST_TOLERANCE = 1e-12




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


def pair_tests(
    wide: pd.DataFrame,
    pairs: Sequence[tuple[str, str]],
    *,
    n_resamples: int,
    alpha: float,
    seed: int,
    min_queries: int,
) -> pd.DataFrame:
    """One row per ``(system, other)`` of ``pairs``: the mean paired difference system - other
    over their common queries with its interval, both tests' p-values, Holm-adjusted over
    ``pairs``, and which are significant (never with fewer than ``min_queries`` pairs). The
    interval is the t-test's at the level Holm tested the pair at, so it excludes 0 exactly where
    ``p_ttest_holm < alpha``; ``mdd`` / ``mdd_family``: the minimum detectable differences;
    ``mean_system`` / ``mean_other``: each one's mean over the paired queries (all folds pooled),
    whose difference is ``diff`` up to rounding."""
    first = wide[[a for a, _ in pairs]].to_numpy(dtype=np.float64)
    second = wide[[b for _, b in pairs]].to_numpy(dtype=np.float64)
    differences = first - second  # NaN where either value is missing
    # a loop over pairs, not queries: each t-test is vectorised over the queries
    p_ttest = np.array([paired_ttest(first[:, j], second[:, j]) for j in range(len(pairs))], dtype=np.float64)
    p_ttest_holm = holm(p_ttest)
    level = holm_consistent_levels(p_ttest, p_ttest_holm, alpha)
    interval = mean_difference_intervals(differences, np.where(np.isnan(level), 1.0 - alpha, level))
    lo, hi = interval["lo"], interval["hi"]
    # paired_ttest calls a difference constant up to rounding (e.g. 1e-17) no difference, p = 1:
    # the interval of that rounding noise may miss 0, so it reaches 0 there
    noise = (p_ttest == 1.0) & ((lo > 0) | (hi < 0))
    lo, hi = np.where(noise, np.minimum(lo, 0.0), lo), np.where(noise, np.maximum(hi, 0.0), hi)
    family = max(int(np.count_nonzero(~np.isnan(p_ttest))), 1)  # Holm's m
    paired = np.isfinite(differences)
    with np.errstate(invalid="ignore", divide="ignore"):  # no paired query: NaN
        pooled = [np.where(paired, values, 0.0).sum(axis=0) / paired.sum(axis=0) for values in (first, second)]
    p_rand = randomization_tests_of_differences(differences, n_resamples=n_resamples, seed=seed)
    out = pd.DataFrame({
        "system": [a for a, _ in pairs], "other": [b for _, b in pairs], "n_pairs": interval["n"].astype(int),
        "mean_system": pooled[0], "mean_other": pooled[1], "diff": interval["mean"], "diff_lo": lo, "diff_hi": hi, "ci_level": level,
        "mdd": minimum_detectable_differences(interval["sd"], interval["n"], alpha, POWER),
        "mdd_family": minimum_detectable_differences(interval["sd"], interval["n"], alpha / family, POWER),
        # NaN compares False everywhere, so unpaired queries count nowhere
        "wins": (differences > 0).sum(axis=0), "ties": (differences == 0).sum(axis=0),
        "losses": (differences < 0).sum(axis=0),
        "p_ttest": p_ttest, "p_rand": p_rand, "p_ttest_holm": p_ttest_holm, "p_rand_holm": holm(p_rand),
    })
    out["too_few_queries"] = out["n_pairs"] < min_queries
    # NaN < alpha is False, so untestable pairs are never significant.
    out["sig_ttest"] = (out["p_ttest_holm"] < alpha) & ~out["too_few_queries"]
    out["sig_rand"] = (out["p_rand_holm"] < alpha) & ~out["too_few_queries"]
    return out


def direction(diff, significant) -> np.ndarray:
    """``better`` / ``worse`` where ``significant`` (by the sign of the paired difference), else ``none``."""
    diff, significant = np.asarray(diff, dtype=np.float64), np.asarray(significant, dtype=bool)
    return np.select([significant & (diff > 0), significant & (diff < 0)], ["better", "worse"], "none")


def metric_comparison(
    per_query: pd.DataFrame,
    metric: str,
    systems: Sequence[str],
    *,
    n_resamples: int,
    alpha: float,
    seed: int,
    min_queries: int = DEFAULT_MIN_QUERIES,
) -> pd.DataFrame:
    """The :data:`STATS` of one metric, one row per system; ``systems[0]`` is the baseline."""
    baseline, others = systems[0], list(systems[1:])
    out = fold_mean_and_std(per_query, metric).reindex(systems)
    wide = by_query(per_query, metric)
    tests = pair_tests(wide, [(s, baseline) for s in others], n_resamples=n_resamples, alpha=alpha, seed=seed,
                       min_queries=min_queries).set_index("system").drop(columns="other")
    tests = tests.rename(columns={"mean_system": "pooled_mean", "mean_other": "pooled_baseline"})
    base_values = wide[baseline].to_numpy(dtype=np.float64)
    base_n = int(np.count_nonzero(np.isfinite(base_values)))
    base_mean = float(np.nanmean(base_values)) if base_n else np.nan
    base_row = pd.DataFrame({"n_pairs": base_n, "too_few_queries": base_n < min_queries, "wins": 0,
                             "ties": base_n, "losses": 0, "pooled_mean": base_mean, "pooled_baseline": base_mean,
                             "sig_ttest": False, "sig_rand": False}, index=[baseline])
    out = out.join(pd.concat([base_row, tests]).reindex(systems))
    out[["n_pairs", "wins", "ties", "losses"]] = out[["n_pairs", "wins", "ties", "losses"]].astype(int)
    out["direction"] = direction(out["diff"], out["sig_ttest"] | out["sig_rand"])
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
    min_queries: int = DEFAULT_MIN_QUERIES,
) -> pd.DataFrame:
    """One row per system (baseline first), columns ``(metric, stat)`` for ``stat`` in STATS.

    Tests compare each system with the baseline over queries matched on (fold, qid);
    p-values are Holm-corrected across the non-baseline systems, per metric.
    ``table.attrs`` records baseline, alpha, n_resamples, min_queries and metrics for the writers.
    """
    metrics = list(metrics)
    check_per_query(per_query, metrics)
    systems = ordered_systems(per_query, baseline)
    per_metric = {
        metric: metric_comparison(per_query, metric, systems, n_resamples=n_resamples, alpha=alpha, seed=seed,
                                  min_queries=min_queries)
        for metric in metrics
    }
    table = pd.concat(per_metric, axis=1, names=["metric", "stat"])
    table.index.name = "system"
    table.attrs.update(baseline=baseline, alpha=alpha, n_resamples=n_resamples, metrics=metrics,
                       min_queries=min_queries, compare="baseline")
    return table


def all_pairs_comparison(
    per_query: pd.DataFrame,
    metrics: Sequence[str],
    systems: Sequence[str],
    *,
    n_resamples: int = 10000,
    alpha: float = 0.05,
    seed: int = 0,
    min_queries: int = DEFAULT_MIN_QUERIES,
    decided_by: str = PAIRS_TEST,
) -> pd.DataFrame:
    """Every pair of ``systems`` (in their order) per metric, as ranx's ``compare`` does: the
    :data:`PAIR_COLUMNS`, p-values Holm-adjusted over all pairs of the metric; ``winner`` is the
    system with the higher mean paired difference where test ``decided_by`` (a key of
    :data:`TEST_NAMES`) is significant."""
    if decided_by not in TEST_NAMES:
        raise ValueError(f"decided_by must be one of {list(TEST_NAMES)}, got {decided_by!r}")
    metrics = list(metrics)
    check_per_query(per_query, metrics)
    pairs = list(itertools.combinations(systems, 2))
    frames = []
    for metric in metrics:
        tests = pair_tests(by_query(per_query, metric), pairs, n_resamples=n_resamples, alpha=alpha, seed=seed,
                           min_queries=min_queries)
        tests["winner"] = winners(tests, decided_by)
        tests["decided_by"] = decided_by
        tests.insert(0, "metric", metric)
        frames.append(tests)
    columns = list(PAIR_COLUMNS)
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def baseline_pairs(table: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """The table's tests as :data:`PAIR_COLUMNS` rows (system, baseline), so the .pairs.csv file
    holds every tested pair in either mode; ``winner`` by :data:`PAIRS_TEST`."""
    long = long_numbers(table, metrics)
    long = long[~long["is_baseline"]].rename(columns={"pooled_mean": "mean_system", "pooled_baseline": "mean_other"})
    long["other"] = table.attrs.get("baseline", table.index[0])
    long["winner"] = winners(long, PAIRS_TEST)
    long["decided_by"] = PAIRS_TEST
    return long[list(PAIR_COLUMNS)].reset_index(drop=True)


def winners(pairs: pd.DataFrame, test: str) -> np.ndarray:
    """Per pair row, the system that is significantly better by ``test``, or ''."""
    won = direction(pairs["diff"], pairs[f"sig_{test}"])
    return np.select([won == "better", won == "worse"],
                     [pairs["system"].to_numpy(dtype=object), pairs["other"].to_numpy(dtype=object)], "")


def mark_not_learned(table: pd.DataFrame, not_learned: dict[str, dict[int, list[str]]]) -> pd.DataFrame:
    """Record the systems whose chosen model did not learn in some fold ({system: {fold:
    problems}}): the writers mark them and say why in the legend, the CSV has a column."""
    table.attrs["not_learned"] = {s: v for s, v in not_learned.items() if s in table.index}
    return table


def mark_tied_scores(table: pd.DataFrame, tied: dict[str, dict[int, float]],
                     max_tied_share: float = MAX_TIED_SHARE) -> pd.DataFrame:
    """Record the systems whose test scores were all tied in more than ``max_tied_share`` of
    some fold's queries ({system: {fold: share of queries all tied}}): the writers mark them and
    say so in the legend, the CSV has a column (``tied_scores``)."""
    table.attrs["tied_scores"] = {s: v for s, v in tied.items() if s in table.index and v}
    table.attrs["max_tied_share"] = max_tied_share
    return table


def mark_validation_queries(table: pd.DataFrame, vali_queries: dict[int, int]) -> pd.DataFrame:
    """Record the number of validation queries per fold ({fold: n}): the writers warn where it
    is below the table's ``min_queries``, since model selection then chose on too few."""
    table.attrs["vali_queries"] = {int(f): int(n) for f, n in vali_queries.items()}
    return table


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
    long["tied_scores"] = long["system"].isin(list(table.attrs.get("tied_scores", {})))
    return long
