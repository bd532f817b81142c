"""Evaluation conventions a paper may have used, applied to scores we already have.

Papers leave open how a metric was computed: NDCG's gain (``2^r - 1``, ``r``, or binary
relevance), its discount (``1/log2(1 + rank)``, or Jarvelin and Kekalainen's 1 at ranks 1 and 2,
then ``1/log2(rank)``, the form Chakrabarti et al. cite), and which label counts as relevant for
MAP, MRR and P@k. None of these needs a model to be retrained: they re-score the rankings a run
wrote. A convention is plain data (a dict of the keys below); :func:`per_query` computes one
metric per query under it, all queries at once. Nothing here computes a metric of its own: NDCG
is :func:`rankstudy.evaluation.metrics.ndcg_ranked` with the NDCG keys as its parameters (gains,
discounts and the ideal DCG of :mod:`rankstudy.evaluation.dcg`), the other metrics are
:func:`rankstudy.evaluation.metrics.per_query`'s; only LETOR 4.0's MeanNDCG is assembled here.

Keys (missing keys take our pipeline's defaults):
    gain: "exp" (2^label - 1, ours) | "linear" (label) | "binary" (1 if label >= rel_threshold)
    discount: "log2" (1/log2(1 + rank), ours) | "jarvelin" (1 for ranks 1-2, then 1/log2(rank))
    rel_threshold: the smallest relevant label for MAP, MRR, P@k, AUC and the binary gain
    ideal: "cutoff" (NDCG@k's ideal DCG over the ideal ranking's top k, ours) | "all" (over all of
        the query's documents, which some code does: it lowers NDCG@k of queries with many relevant)
    ties: "file" (documents with equal scores keep the file's order, ours) | "pessimistic"
        (relevant ones last) | "optimistic" (relevant ones first); acts on every metric
    short_query: "cutoff" (NDCG@k of a query with fewer than k documents is over its whole list,
        ours) | "zero" (it is 0)
    short_precision: "k" (P@k of such a query counts the missing ranks as non-relevant, ours) |
        "zero" (it is 0)
    max_label: None | the largest label the convention defines; a larger or non-integer label is
        refused (LETOR's scripts look labels up in tables of 0, 1, 2)
A query without a relevant document scores 0 under every convention here (our default
``no_relevant: zero``, and LETOR's).

Named conventions (:data:`NAMED`; :func:`per_query` takes a name or a dict): LETOR's official
evaluation scripts by Jun Xu and Tie-Yan Liu, ``Eval-Score-3.0.pl`` (LETOR 3.0) and
``Eval-Score-4.0.pl`` (LETOR 4.0, March 2009), which produced LETOR's published baselines.
Both rank each query's documents by a stable sort on descending score over the file's order
(Perl's default mergesort since 5.8: ties keep the file order), NDCG gain from the table
0, 1, 3 for labels 0, 1, 2 (= 2^r - 1), discount 1 at ranks 1 and 2 then 1/log2(rank), ideal
DCG@k over the labels sorted descending (cut at k), 0 when it is 0; relevant = label 1 or 2 for
P@k and MAP; MAP = average precision over all of a query's relevant documents, 0 without one; a
metric is averaged over every query of the file. Where they differ: a query with n < k documents
has no NDCG@k entry in either (the 3.0 script computes positions up to min(n, 16); some copies
have 10; the 4.0 one up to n), and the averaging adds nothing for it while dividing by all queries, so it counts 0;
P@k of such a query is likewise missing in 3.0 (0), while 4.0 counts the missing ranks as
non-relevant (relevant in its list / k, ours). 4.0 also reports ``MeanNDCG``: per query the mean
of NDCG@1..n over all its n positions (metric name ``meanndcg`` here, under any convention).
"""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import REL_THRESHOLD
from rankstudy.evaluation import dcg, metrics
from rankstudy.evaluation.ranking import rank_flat

DEFAULTS = {"gain": dcg.GAIN, "discount": dcg.DISCOUNT, "rel_threshold": REL_THRESHOLD, "ideal": "cutoff",
            "ties": "file", "short_query": "cutoff", "short_precision": "k", "max_label": None}
GAINS = dcg.GAINS
BINARY_RELEVANCE = ("map", "mrr", "p", "auc")
DISCOUNTS = dcg.DISCOUNTS
IDEALS = ("cutoff", "all")
TIES = ("file", "pessimistic", "optimistic")
SHORT_QUERY = ("cutoff", "zero")
SHORT_PRECISION = ("k", "zero")
NDCG_ONLY = {"gain", "discount", "ideal", "short_query"}  # keys that act on NDCG alone
NDCG_PARAMETERS = (*NDCG_ONLY, "rel_threshold")  # the keywords of metrics.ndcg_ranked
MEAN_NDCG = "meanndcg"  # LETOR 4.0's MeanNDCG, computed here only

# LETOR's evaluation scripts (the module docstring lists what they do)
NAMED: dict[str, dict] = {
    "letor3": {"discount": "jarvelin", "short_query": "zero", "short_precision": "zero", "max_label": 2},
    "letor4": {"discount": "jarvelin", "short_query": "zero", "max_label": 2},
}

# the variants the scorecard tries, each one choice away from ours, and the joint one
# Chakrabarti et al. describe (binary gain with their cited discount)
VARIANTS: dict[str, dict] = {
    "ours": {},
    "gain r": {"gain": "linear"},
    "binary gain": {"gain": "binary"},
    "Jarvelin discount": {"discount": "jarvelin"},
    "binary gain + Jarvelin discount": {"gain": "binary", "discount": "jarvelin"},
    "relevant = label 2": {"rel_threshold": 2.0},
    "ideal DCG over all documents": {"ideal": "all"},
    "ties: relevant last": {"ties": "pessimistic"},
    "ties: relevant first": {"ties": "optimistic"},
}


def resolve(convention: dict | str) -> dict:
    """``convention`` (a dict of keys, or a name of :data:`NAMED`) with every key filled in."""
    if isinstance(convention, str):
        if convention not in NAMED:
            raise ValueError(f"evaluation convention: unknown name {convention!r}; named ones: {sorted(NAMED)}")
        convention = NAMED[convention]
    unknown = set(convention) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"evaluation convention: unknown key(s) {sorted(unknown)}; valid: {sorted(DEFAULTS)}")
    out = {**DEFAULTS, **convention}
    if out["gain"] not in GAINS:
        raise ValueError(f"evaluation convention: gain {out['gain']!r} is not one of {GAINS}")
    if out["discount"] not in DISCOUNTS:
        raise ValueError(f"evaluation convention: discount {out['discount']!r} is not one of {DISCOUNTS}")
    if out["ideal"] not in IDEALS:
        raise ValueError(f"evaluation convention: ideal {out['ideal']!r} is not one of {IDEALS}")
    if out["ties"] not in TIES:
        raise ValueError(f"evaluation convention: ties {out['ties']!r} is not one of {TIES}")
    if out["short_query"] not in SHORT_QUERY:
        raise ValueError(f"evaluation convention: short_query {out['short_query']!r} is not one of {SHORT_QUERY}")
    if out["short_precision"] not in SHORT_PRECISION:
        raise ValueError(f"evaluation convention: short_precision {out['short_precision']!r} is not one of "
                         f"{SHORT_PRECISION}")
    return out


def check_labels(labels: np.ndarray, max_label) -> None:
    """Refuse labels a convention with ``max_label`` does not define (LETOR's scripts would give
    them gain 0 and count them non-relevant, silently)."""
    if max_label is None:
        return
    bad = (labels < 0) | (labels > max_label) | (labels != np.floor(labels))
    if bad.any():
        raise ValueError(f"evaluation convention: it defines the labels 0..{max_label:g} only; the data has "
                         f"label(s) {sorted(set(labels[bad].tolist()))[:5]}")


def tie_order(scores, labels, offsets, ties: str) -> np.ndarray:
    """A permutation of the documents, within each query, that puts tied documents in the order
    ``ties`` says: our ranking keeps the order of ties (a stable sort), so permuting first is
    enough. Relevant last (pessimistic) = labels ascending before the stable score sort."""
    if ties == "file":
        return np.arange(len(scores))
    query = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    labels = np.asarray(labels, dtype=np.float64)
    return np.lexsort((labels if ties == "pessimistic" else -labels, query))


def ndcg(scores, labels, offsets, k: int | None, convention: dict) -> np.ndarray:
    """NDCG@k per query under ``convention``: the one NDCG of :mod:`rankstudy.evaluation.metrics`
    with the convention's keys as its parameters; 0 for a query with no gain (our "zero" policy)."""
    c = resolve(convention)
    ranking = rank_flat(np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64),
                        np.asarray(offsets, dtype=np.int64))
    return metrics.ndcg_ranked(ranking, k, "zero", **{key: c[key] for key in NDCG_PARAMETERS})


def mean_ndcg(scores, labels, offsets, convention: dict | str) -> np.ndarray:
    """Per query, the mean of NDCG@1..n over its n positions under ``convention`` (LETOR 4.0's
    MeanNDCG); 0 for a query with no gain."""
    c = resolve(convention)
    labels = np.asarray(labels, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    ranking = rank_flat(np.asarray(scores, dtype=np.float64), labels, offsets)
    lengths = np.diff(offsets)
    if ranking.width == 0:
        return np.zeros(len(lengths))
    d = dcg.discounts(ranking.width, c["discount"])
    g = np.zeros_like(ranking.labels)
    g[ranking.mask] = dcg.gain(ranking.labels[ranking.mask], c["gain"], c["rel_threshold"])
    # NDCG@i at every depth i: running sums of one ranking and of one ideal sort
    running = np.cumsum(g * d, axis=1)  # DCG@i at column i - 1
    ideal = np.cumsum(-np.sort(-g, axis=1) * d, axis=1)
    if c["ideal"] == "all":
        ideal = ideal[:, -1:]
    at = np.divide(running, ideal, out=np.zeros_like(running), where=(ideal > 0) & ranking.mask)
    return at.sum(axis=1) / np.maximum(lengths, 1)


def per_query(scores, labels, offsets, metric: str, convention: dict | str) -> np.ndarray:
    """One metric (any name :func:`metrics.parse_metric` takes, or ``meanndcg``) per query under
    ``convention`` (a dict of keys or a name of :data:`NAMED`)."""
    c = resolve(convention)
    base, k = (MEAN_NDCG, None) if metric == MEAN_NDCG else metrics.parse_metric(metric)
    offsets = np.asarray(offsets, dtype=np.int64)
    check_labels(np.asarray(labels, dtype=np.float64), c["max_label"])
    order = tie_order(scores, labels, offsets, c["ties"])
    scores, labels = np.asarray(scores, dtype=np.float64)[order], np.asarray(labels, dtype=np.float64)[order]
    if base == MEAN_NDCG:
        return mean_ndcg(scores, labels, offsets, c)
    if base == "ndcg":
        return ndcg(scores, labels, offsets, k, c)
    values = metrics.per_query(scores, labels, offsets, [metric], rel_threshold=c["rel_threshold"])[metric]
    if base == "p" and c["short_precision"] == "zero":
        values = np.where(np.diff(offsets) < k, 0.0, values)
    return values


def moves(metric: str) -> list[str]:
    """The variants of :data:`VARIANTS` that can change ``metric`` (the gain and discount act on
    NDCG only; the threshold on every metric of binary relevance)."""
    base, _ = (MEAN_NDCG, None) if metric == MEAN_NDCG else metrics.parse_metric(metric)
    if base in ("ndcg", MEAN_NDCG):
        acting = NDCG_ONLY | {"ties"}
    elif base in BINARY_RELEVANCE:
        acting = {"rel_threshold", "ties"}
    else:
        acting = {"ties"}
    return [name for name, v in VARIANTS.items() if not v or (set(v) <= acting and set(v) & acting)]
