"""Per-query ranking metrics, computed for all queries at once on padded arrays.

Each metric is a small pure function of padded ``scores``, ``labels`` and ``mask``
(shape ``(Q, L)``, as built by :func:`rankstudy.data.blocks.pad`) that returns one
value per query, shape ``(Q,)``. :func:`per_query` takes the flat per-row layout of a
split (:mod:`rankstudy.data.kinds`), sorts once (:mod:`rankstudy.evaluation.ranking`)
and computes every requested metric from that one ranking, by name through the
:data:`METRICS` registry. :func:`evaluate` wraps it into a DataFrame.

Ranking and ties
    Documents are ranked by descending score. Documents with equal scores keep
    their input order (a stable sort), so of two tied documents the one that comes
    first in the data is ranked higher. NDCG, ERR, MRR, MAP and P@k all use this
    rule. AUC is the exception: it compares pairs, and a tied relevant/non-relevant
    pair counts 1/2 (Mann-Whitney U), whatever the input order. NaN scores are
    rejected with a ValueError.

Definitions (rank ``i`` is 1-based)
    ``ndcg@k``  DCG@k / ideal DCG@k, with gain ``2^label - 1`` and discount
                ``1 / log2(i + 1)``. The ideal DCG comes from the labels sorted in
                descending order. ``ndcg`` (no k), or k longer than the list, uses
                the whole list. Gains, discounts and the ideal DCG are those of
                :mod:`rankstudy.evaluation.dcg`; other conventions (LETOR's among
                them) are parameters of :func:`ndcg_ranked`.
    ``err@k``   Expected Reciprocal Rank (Chapelle et al., 2009):
                ``sum_i (1/i) R_i prod_{j<i} (1 - R_j)`` where
                ``R = (2^label - 1) / 2^max_label``. ``max_label`` is the top grade
                of the data set's label scale (default: the largest label in the
                data passed in). ``err`` (no k) uses the whole list.
    ``mrr@k``   1 / rank of the first relevant document, 0 if it is below rank k.
                ``mrr`` (no k) uses the whole list.
    ``map``     Average precision: the mean, over the relevant documents, of the
                precision at each one's rank. Its mean over queries is MAP.
    ``p@k``     (relevant documents in the top k) / k. The denominator is k even
                when the query has fewer than k documents (LETOR convention).
    ``auc``     The fraction of (relevant, non-relevant) pairs where the relevant
                document scores higher; a score tie counts 1/2.

    MRR, MAP, P@k and AUC use binary relevance: ``label >= rel_threshold``
    (default 1). NDCG and ERR use the graded labels.

Queries with no relevant document (``no_relevant`` policy)
    For NDCG and ERR, a query has no relevant document when no label is > 0, so
    its ideal DCG is not positive. For MRR, MAP, P@k and AUC it means no label >= rel_threshold.
    AUC is also undefined when a query has no non-relevant document. The same
    policy applies to all of these cases:

    ``"zero"``  the metric is 0 (default; matches LETOR's evaluation tool)
    ``"one"``   the metric is 1 (LightGBM's convention)
    ``"drop"``  the metric is NaN, and :func:`mean_metrics` leaves the query out
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property
from typing import NamedTuple

import numpy as np

from rankstudy.data.blocks import pad, segment_ids
from rankstudy.data.rankdata import REL_THRESHOLD
from rankstudy.evaluation import dcg
from rankstudy.evaluation.ranking import Ranking, RelevantPositions, rank_flat, rank, relevant_positions

# the cutoff of the metric@k the papers report (NDCG@10, MRR@10): the one default of the k of every
# loss and inference routine built on such a metric
K = 10
SELECTION_METRIC = f"ndcg@{K}"  # what model selection judges by unless the config says otherwise
NO_RELEVANT_POLICIES = ("zero", "one", "drop")
NO_RELEVANT = "zero"  # a query without a relevant document scores 0, unless the config says otherwise
_POLICY_VALUE = {"zero": 0.0, "one": 1.0, "drop": np.nan}

_METRIC_NAME = re.compile(r"([a-z]+)(?:@([1-9][0-9]*))?")


# --- metrics on a Ranking (shared by the padded-array functions and per_query) ---

def _check_policy(no_relevant: str) -> None:
    if no_relevant not in NO_RELEVANT_POLICIES:
        raise ValueError(f"no_relevant must be one of {NO_RELEVANT_POLICIES}, got {no_relevant!r}")


def _apply_policy(values: np.ndarray, undefined: np.ndarray, no_relevant: str) -> np.ndarray:
    return np.where(undefined, _POLICY_VALUE[no_relevant], values)


def _ranks(list_length: int) -> np.ndarray:
    return np.arange(1, list_length + 1, dtype=np.float64)


def _safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, with 0 where the denominator is 0; the policy replaces those later."""
    return np.divide(numerator, denominator, out=np.zeros(np.shape(numerator)), where=denominator != 0)


def _has_graded_relevant(ranking: Ranking) -> np.ndarray:
    rows = segment_ids(ranking.offsets)[ranking.flat_labels > 0]
    return np.bincount(rows, minlength=len(ranking.offsets) - 1) > 0


def ndcg_ranked(ranking: Ranking, k: int | None, no_relevant: str = NO_RELEVANT, *, gain: str = dcg.GAIN,
                discount: str = dcg.DISCOUNT, rel_threshold: float = REL_THRESHOLD, ideal: str = "cutoff",
                short_query: str = "cutoff") -> np.ndarray:
    """NDCG@k per query of ``ranking``; k=None means the whole list. The keywords are the
    conventions of :mod:`rankstudy.evaluation.conventions` (defaults: ours): the gain and the
    discount (:mod:`rankstudy.evaluation.dcg`, ``rel_threshold`` for the binary gain), the ideal
    DCG over the ideal ranking's top k (``"cutoff"``) or over all of the query's documents
    (``"all"``), and whether a query with fewer than k documents keeps the NDCG of its whole list
    (``"cutoff"``) or gets 0 (``"zero"``, LETOR's scripts, applied after ``no_relevant``)."""
    cutoff = dcg.cutoff(k, ranking.width)
    discounts = dcg.discounts(cutoff, discount)
    gains = dcg.gain(ranking.top_labels(cutoff), gain, rel_threshold)
    if gain == "binary" and rel_threshold <= 0:  # the padding's label 0 would count as relevant
        gains = np.where(np.arange(cutoff) < np.diff(ranking.offsets)[:, None], gains, 0.0)
    dcg_values = gains @ discounts  # padding labels are 0: gain 0
    ideal_discounts = dcg.discounts(ranking.width, discount) if ideal == "all" else discounts
    ideal_values = ranking.ideal_dcg(ideal_discounts, gain, rel_threshold)
    values = _apply_policy(_safe_divide(dcg_values, ideal_values), ~(ideal_values > 0), no_relevant)
    if short_query == "zero" and k is not None:
        values[np.diff(ranking.offsets) < k] = 0.0
    return values


def _err_ranked(ranking: Ranking, k: int | None, max_label: float | None, no_relevant: str) -> np.ndarray:
    observed_max = ranking.flat_labels.max(initial=0.0)
    if max_label is None:
        max_label = observed_max
    elif max_label < observed_max:
        raise ValueError(f"max_label={max_label} is below the largest label in the data ({observed_max})")
    cutoff = dcg.cutoff(k, ranking.width)
    # padding labels are 0, so its stop probability is 0
    stop_probability = (np.exp2(ranking.top_labels(cutoff)) - 1.0) / np.exp2(max_label)
    # The user reaches rank i only if no earlier document satisfied them.
    reached = np.empty_like(stop_probability)
    reached[:, :1] = 1.0
    np.cumprod(1.0 - stop_probability[:, :-1], axis=1, out=reached[:, 1:])
    err = (stop_probability * reached) @ (1.0 / _ranks(cutoff))
    return _apply_policy(err, ~_has_graded_relevant(ranking), no_relevant)


def _mrr_from_positions(relevant: RelevantPositions, no_relevant: str, k: int | None = None) -> np.ndarray:
    has_relevant = relevant.count > 0
    rr = np.zeros(len(relevant.count))
    first = relevant.ranks[relevant.first[has_relevant]]
    rr[has_relevant] = np.where(first <= (np.inf if k is None else k), 1.0 / first, 0.0)
    return _apply_policy(rr, ~has_relevant, no_relevant)


def _average_precision_from_positions(relevant: RelevantPositions, no_relevant: str) -> np.ndarray:
    # The j-th relevant document of a query has j relevant documents at or above it.
    hits_so_far = np.arange(1, len(relevant.rows) + 1) - relevant.first[relevant.rows]
    precision_sum = np.bincount(relevant.rows, weights=hits_so_far / relevant.ranks, minlength=len(relevant.count))
    return _apply_policy(_safe_divide(precision_sum, relevant.count), relevant.count == 0, no_relevant)


def _precision_from_positions(relevant: RelevantPositions, k: int, no_relevant: str) -> np.ndarray:
    hits = np.bincount(relevant.rows[relevant.ranks <= k], minlength=len(relevant.count))
    return _apply_policy(hits / k, relevant.count == 0, no_relevant)  # denominator k even for short lists (LETOR)


def _auc_ranked(ranking: Ranking, relevant: RelevantPositions, no_relevant: str) -> np.ndarray:
    scores, _ = pad(ranking.flat_scores, ranking.offsets)
    is_relevant = np.zeros(ranking.mask.shape, dtype=bool)
    is_relevant[relevant.rows, relevant.ranks.astype(np.int64) - 1] = True
    nonrelevant = ranking.mask & ~is_relevant
    n_nonrelevant = nonrelevant.sum(axis=1)
    pairs = relevant.count * n_nonrelevant
    # Non-relevant documents ranked at or above each position, and strictly above it.
    at_or_above = np.cumsum(nonrelevant, axis=1, dtype=np.int64)
    above = at_or_above - nonrelevant
    # Tied documents are adjacent in the ranking. A relevant document beats the
    # non-relevant ones below its tie group and half of those inside it, which is
    #   n_nonrelevant - (at_or_above at the group's end + above at the group's start) / 2.
    # Both counts never decrease along a row, so a running max (min, from the right)
    # over their values at group starts (ends) spreads them over the whole group.
    # Padding may join the last group but counts no document.
    tied_with_previous = scores[:, 1:] == scores[:, :-1]
    starts_group = np.ones(is_relevant.shape, dtype=bool)
    starts_group[:, 1:] = ~tied_with_previous
    ends_group = np.ones(is_relevant.shape, dtype=bool)
    ends_group[:, :-1] = ~tied_with_previous
    above_group = np.maximum.accumulate(np.where(starts_group, above, -1), axis=1)
    at_or_above_group = np.minimum.accumulate(
        np.where(ends_group, at_or_above, np.iinfo(np.int64).max)[:, ::-1], axis=1)[:, ::-1]
    twice_correct = np.where(is_relevant, 2 * n_nonrelevant[:, None] - at_or_above_group - above_group, 0).sum(axis=1)
    # a query whose documents are all relevant has every relevant document above every
    # non-relevant one (there is none): 1, as its MAP is; one without a relevant document is
    # undefined and follows the no_relevant policy, as MAP does
    values = np.where(relevant.count > 0, _safe_divide(twice_correct / 2.0, pairs), 0.0)
    values = np.where((relevant.count > 0) & (n_nonrelevant == 0), 1.0, values)
    return _apply_policy(values, relevant.count == 0, no_relevant)


# --- public functions of padded (Q, L) arrays ---

def ndcg(scores, labels, mask, *, k: int | None = None, no_relevant: str = NO_RELEVANT, **convention) -> np.ndarray:
    """NDCG@k per query (gain 2^label - 1); k=None means the whole list. ``convention``: the
    keywords of :func:`ndcg_ranked` (gain, discount, rel_threshold, ideal, short_query)."""
    _check_policy(no_relevant)
    return ndcg_ranked(rank(scores, labels, mask), k, no_relevant, **convention)


def err(scores, labels, mask, *, k: int | None = None, max_label: float | None = None,
        no_relevant: str = NO_RELEVANT) -> np.ndarray:
    """Expected Reciprocal Rank per query. ``max_label`` is the top grade of the label scale."""
    _check_policy(no_relevant)
    return _err_ranked(rank(scores, labels, mask), k, max_label, no_relevant)


def mrr(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD, no_relevant: str = NO_RELEVANT) -> np.ndarray:
    """Reciprocal rank of the first document with label >= rel_threshold, per query."""
    _check_policy(no_relevant)
    return _mrr_from_positions(relevant_positions(rank(scores, labels, mask), rel_threshold), no_relevant)


def average_precision(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD,
                      no_relevant: str = NO_RELEVANT) -> np.ndarray:
    """Average precision per query (its mean over queries is MAP)."""
    _check_policy(no_relevant)
    ranking = rank(scores, labels, mask)
    return _average_precision_from_positions(relevant_positions(ranking, rel_threshold), no_relevant)


def precision(scores, labels, mask, *, k: int, rel_threshold: float = REL_THRESHOLD,
              no_relevant: str = NO_RELEVANT) -> np.ndarray:
    """P@k per query, denominator k."""
    _check_policy(no_relevant)
    ranking = rank(scores, labels, mask)
    return _precision_from_positions(relevant_positions(ranking, rel_threshold), k, no_relevant)


def auc(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD, no_relevant: str = NO_RELEVANT) -> np.ndarray:
    """Fraction of correctly ordered (relevant, non-relevant) pairs per query, ties 1/2. A query
    whose documents are all relevant gets 1 (as its MAP), one without a relevant document the
    ``no_relevant`` policy (as MAP)."""
    _check_policy(no_relevant)
    ranking = rank(scores, labels, mask)
    return _auc_ranked(ranking, relevant_positions(ranking, rel_threshold), no_relevant)


# --- the registry: every metric by name ---

class RankedQueries:
    """One ranking of every query with the options of one metrics call; the positions of the
    binary-relevant documents are found on first use and shared by the metrics that need them."""

    def __init__(self, ranking: Ranking, *, rel_threshold: float, max_label: float | None, no_relevant: str):
        self.ranking = ranking
        self.rel_threshold = rel_threshold
        self.max_label = max_label
        self.no_relevant = no_relevant

    @cached_property
    def relevant(self) -> RelevantPositions:
        return relevant_positions(self.ranking, self.rel_threshold)


class Metric(NamedTuple):
    """A metric of the registry: ``compute(ranked, k) -> (Q,)`` values per query, and whether
    its name takes a cutoff ``@k``: ``optional``, ``none`` or ``required``."""

    compute: Callable[[RankedQueries, int | None], np.ndarray]
    cutoff: str


def _ndcg_metric(r: RankedQueries, k: int | None) -> np.ndarray:
    """NDCG (gain 2^r - 1, discount 1/log2(1 + rank)), over the top k or the whole list."""
    return ndcg_ranked(r.ranking, k, r.no_relevant)


def _err_metric(r: RankedQueries, k: int | None) -> np.ndarray:
    """Expected reciprocal rank (Chapelle et al. 2009), R = (2^r - 1)/2^max_label."""
    return _err_ranked(r.ranking, k, r.max_label, r.no_relevant)


def _mrr_metric(r: RankedQueries, k: int | None) -> np.ndarray:
    """Reciprocal rank of the first relevant document (0 beyond rank k)."""
    return _mrr_from_positions(r.relevant, r.no_relevant, k)


def _map_metric(r: RankedQueries, k: None) -> np.ndarray:
    """Average precision over the query's relevant documents."""
    return _average_precision_from_positions(r.relevant, r.no_relevant)


def _precision_metric(r: RankedQueries, k: int) -> np.ndarray:
    """Share of relevant documents among the top k."""
    return _precision_from_positions(r.relevant, k, r.no_relevant)


def _auc_metric(r: RankedQueries, k: None) -> np.ndarray:
    """Share of (relevant, non-relevant) pairs ranked in order, a score tie counting half."""
    return _auc_ranked(r.ranking, r.relevant, r.no_relevant)


# A new metric: one function of (RankedQueries, k) plus one entry here.
METRICS: dict[str, Metric] = {
    "ndcg": Metric(_ndcg_metric, "optional"),
    "err": Metric(_err_metric, "optional"),
    "mrr": Metric(_mrr_metric, "optional"),
    "map": Metric(_map_metric, "none"),
    "p": Metric(_precision_metric, "required"),
    "auc": Metric(_auc_metric, "none"),
}


def valid_metric_forms() -> str:
    forms = {"optional": "{0}, {0}@k", "none": "{0}", "required": "{0}@k"}
    return ", ".join(forms[m.cutoff].format(name) for name, m in METRICS.items()) + \
        " (k a positive integer, e.g. ndcg@10)"


def parse_metric(name: str) -> tuple[str, int | None]:
    """``"ndcg@10"`` -> ``("ndcg", 10)``, ``"map"`` -> ``("map", None)``.

    Raises ValueError, listing the valid forms, if ``name`` is not one of them.
    """
    match = _METRIC_NAME.fullmatch(name) if isinstance(name, str) else None
    if match is not None:
        base, k = match.group(1), (int(match.group(2)) if match.group(2) else None)
        metric = METRICS.get(base)
        if metric is not None and (metric.cutoff == "optional" or (metric.cutoff == "none") == (k is None)):
            return base, k
    raise ValueError(f"unknown metric {name!r}; valid forms: {valid_metric_forms()}")


# --- flat per-row arrays, RankData, summaries ---

def per_query(scores, labels, offsets, metrics: list[str], *, rel_threshold: float = REL_THRESHOLD,
              max_label: float | None = None, no_relevant: str = NO_RELEVANT) -> dict[str, np.ndarray]:
    """Metrics per query from flat per-row arrays grouped by ``offsets``.

    Returns ``{name: (Q,) array}`` for each requested name (see :func:`parse_metric`).
    ``max_label`` defaults to the largest label in ``labels``.
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    parsed = {name: parse_metric(name) for name in metrics}  # reject bad names before any work
    _check_policy(no_relevant)
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    if not (scores.ndim == labels.ndim == 1 and len(scores) == len(labels) == offsets[-1]):
        raise ValueError(f"scores ({scores.shape}) and labels ({labels.shape}) must be flat arrays "
                         f"with offsets[-1] = {offsets[-1]} rows")
    n_queries = len(offsets) - 1
    if n_queries == 0:
        return {name: np.zeros(0) for name in parsed}
    return per_query_ranked(rank_flat(scores, labels, offsets), metrics, rel_threshold=rel_threshold,
                            max_label=max_label, no_relevant=no_relevant)


def per_query_ranked(ranking: Ranking, metrics: list[str], *, rel_threshold: float = REL_THRESHOLD,
                     max_label: float | None = None, no_relevant: str = NO_RELEVANT) -> dict[str, np.ndarray]:
    """:func:`per_query` of a ranking already made (one of :mod:`rankstudy.evaluation.top_ranking`'s,
    for a metric that reads only its top)."""
    _check_policy(no_relevant)
    ranked = RankedQueries(ranking, rel_threshold=rel_threshold, max_label=max_label, no_relevant=no_relevant)
    return {name: METRICS[base].compute(ranked, k) for name, (base, k) in map(_parsed, metrics)}


def _parsed(name: str) -> tuple[str, tuple[str, int | None]]:
    return name, parse_metric(name)


def evaluate(data, scores, metrics: list[str], **kw):
    """One row per query of ``data`` (any split kind: needs ``y``, ``offsets`` and
    ``query_ids``), in data order: a ``qid`` column, then one column per metric, named
    exactly as requested, as a pandas DataFrame. ``kw`` goes to :func:`per_query`."""
    import pandas as pd  # only the jobs that write per-query tables pay for pandas

    values = per_query(scores, data.y, data.offsets, metrics, **kw)
    return pd.DataFrame({"qid": data.query_ids, **values})


def mean_metrics(df) -> dict[str, float]:
    """Mean over queries of each metric column of a DataFrame or of a ``{name: values}``
    mapping (:func:`per_query`'s). NaN (queries dropped by ``no_relevant="drop"``) is left out;
    a column with only NaN gives NaN."""
    means = {}
    for column, column_values in df.items():
        if column == "qid":
            continue
        values = np.asarray(column_values, dtype=np.float64)
        kept = values[~np.isnan(values)]
        means[column] = float(kept.mean()) if len(kept) else float("nan")
    return means
