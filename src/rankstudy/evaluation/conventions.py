"""Evaluation conventions a paper may have used, applied to scores we already have.

Papers leave open how a metric was computed: NDCG's gain (``2^r - 1``, ``r``, or binary
relevance), its discount (``1/log2(1 + rank)``, or Jarvelin and Kekalainen's 1 at ranks 1 and 2,
then ``1/log2(rank)``, the form Chakrabarti et al. cite), and which label counts as relevant for
MAP, MRR and P@k. None of these needs a model to be retrained: they re-score the rankings a run
wrote. A convention is plain data (a dict of the keys below); :func:`per_query` computes one
metric per query under it, all queries at once.

Keys (missing keys take our pipeline's defaults):
    gain: "exp" (2^label - 1, ours) | "linear" (label) | "binary" (1 if label >= rel_threshold)
    discount: "log2" (1/log2(1 + rank), ours) | "jarvelin" (1 for ranks 1-2, then 1/log2(rank))
    rel_threshold: the smallest relevant label for MAP, MRR, P@k, AUC and the binary gain
    ideal: "cutoff" (NDCG@k's ideal DCG over the ideal ranking's top k, ours) | "all" (over all of
        the query's documents, which some code does: it lowers NDCG@k of queries with many relevant)
    ties: "file" (documents with equal scores keep the file's order, ours) | "pessimistic"
        (relevant ones last) | "optimistic" (relevant ones first); acts on every metric
"""

from __future__ import annotations

import numpy as np

from rankstudy.evaluation import metrics
from rankstudy.evaluation.ranking import rank_flat

DEFAULTS = {"gain": "exp", "discount": "log2", "rel_threshold": 1.0, "ideal": "cutoff", "ties": "file"}
GAINS = ("exp", "linear", "binary")
BINARY_RELEVANCE = ("map", "mrr", "p", "auc")
DISCOUNTS = ("log2", "jarvelin")
IDEALS = ("cutoff", "all")
TIES = ("file", "pessimistic", "optimistic")
NDCG_ONLY = {"gain", "discount", "ideal"}  # keys that act on NDCG alone

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


def resolve(convention: dict) -> dict:
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
    return out


def tie_order(scores, labels, offsets, ties: str) -> np.ndarray:
    """A permutation of the documents, within each query, that puts tied documents in the order
    ``ties`` says: our ranking keeps the order of ties (a stable sort), so permuting first is
    enough. Relevant last (pessimistic) = labels ascending before the stable score sort."""
    if ties == "file":
        return np.arange(len(scores))
    query = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    labels = np.asarray(labels, dtype=np.float64)
    return np.lexsort((labels if ties == "pessimistic" else -labels, query))


def discounts(discount: str, k: int) -> np.ndarray:
    """(k,) discount of ranks 1..k."""
    ranks = np.arange(1, k + 1, dtype=np.float64)
    if discount == "jarvelin":
        return 1.0 / np.log2(np.maximum(ranks, 2.0))
    return 1.0 / np.log2(1.0 + ranks)


def gains(labels: np.ndarray, gain: str, rel_threshold: float) -> np.ndarray:
    if gain == "linear":
        return labels
    if gain == "binary":
        return (labels >= rel_threshold).astype(np.float64)
    return np.exp2(labels) - 1.0


def ndcg(scores, labels, offsets, k: int | None, convention: dict) -> np.ndarray:
    """NDCG@k per query under ``convention``; 0 for a query with no gain (our "zero" policy)."""
    c = resolve(convention)
    labels = np.asarray(labels, dtype=np.float64)
    ranking = rank_flat(np.asarray(scores, dtype=np.float64), labels, np.asarray(offsets, dtype=np.int64))
    width = ranking.width
    cutoff = width if k is None else min(k, width)
    if cutoff == 0:
        return np.zeros(len(offsets) - 1)
    d = discounts(c["discount"], cutoff)
    dcg = gains(ranking.top_labels(cutoff), c["gain"], c["rel_threshold"]) @ d
    # the ideal ranking: each query's gains sorted descending, padding (gain 0) last
    g = np.zeros_like(ranking.labels)
    g[ranking.mask] = gains(ranking.labels[ranking.mask], c["gain"], c["rel_threshold"])
    ideal_depth = width if c["ideal"] == "all" else cutoff
    ideal = -np.sort(-g, axis=1)[:, :ideal_depth] @ discounts(c["discount"], ideal_depth)
    return np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)


def per_query(scores, labels, offsets, metric: str, convention: dict) -> np.ndarray:
    """One metric (any name :func:`metrics.parse_metric` takes) per query under ``convention``."""
    c = resolve(convention)
    base, k = metrics.parse_metric(metric)
    order = tie_order(scores, labels, offsets, c["ties"])
    scores, labels = np.asarray(scores, dtype=np.float64)[order], np.asarray(labels, dtype=np.float64)[order]
    if base == "ndcg":
        return ndcg(scores, labels, offsets, k, c)
    return metrics.per_query(scores, labels, offsets, [metric], rel_threshold=c["rel_threshold"])[metric]


def moves(metric: str) -> list[str]:
    """The variants of :data:`VARIANTS` that can change ``metric`` (the gain and discount act on
    NDCG only; the threshold on every metric of binary relevance)."""
    base, _ = metrics.parse_metric(metric)
    if base == "ndcg":
        acting = NDCG_ONLY | {"ties"}
    elif base in BINARY_RELEVANCE:
        acting = {"rel_threshold", "ties"}
    else:
        acting = {"ties"}
    return [name for name, v in VARIANTS.items() if not v or (set(v) <= acting and set(v) & acting)]
