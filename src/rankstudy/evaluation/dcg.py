"""NDCG's arithmetic, written once: gains, discounts with the top-k cut, and the ideal DCG.

Every NDCG of the package is made of these: the metric (:func:`rankstudy.evaluation.metrics.ndcg`,
whose parameters are the evaluation conventions of :mod:`rankstudy.evaluation.conventions`,
LETOR's among them) and the losses that weigh by a discount or divide by the ideal DCG
(ApproxNDCG, NeuralNDCG, LambdaLoss, Tran et al.'s smoothed NDCG and pair weights, the
structural SVMs' and conditional models' NDCG).

``gain`` of a label (:data:`GAINS`)
    ``"exp"`` 2^label - 1 (ours) | ``"linear"`` the label | ``"binary"`` 1 if label >= rel_threshold
``discount`` of a 1-based position p (:data:`DISCOUNTS`; p may be a real number, as the
approximate ranks of the smoothed losses are)
    ``"log2"`` 1 / log2(1 + p) (ours) | ``"jarvelin"`` 1 at p <= 2, then 1 / log2(p) (Jarvelin and
    Kekalainen's form, LETOR's scripts', the D(r) of Chakrabarti et al.)
the cut
    DCG@k counts ranks 1..k: :func:`discounts` is 0 from rank k + 1 on.
ideal DCG@depth
    the DCG of the query's labels sorted in descending order (every gain here grows with the
    label), over its top ``depth`` positions (``depth`` = k, or the whole list).
"""

from __future__ import annotations

import numpy as np

from rankstudy.data.blocks import pad, segment_ids
from rankstudy.data.rankdata import REL_THRESHOLD

GAINS = ("exp", "linear", "binary")
GAIN = "exp"  # the default gain of every DCG here (ours and LETOR's)
DISCOUNTS = ("log2", "jarvelin")
DISCOUNT = "log2"  # the default discount of every DCG here
LN2 = np.log(2.0)


def gain(labels: np.ndarray, kind: str = GAIN, rel_threshold: float = REL_THRESHOLD) -> np.ndarray:
    """Gain of each label (module docstring)."""
    if kind == "linear":
        return labels
    if kind == "binary":
        return (labels >= rel_threshold).astype(np.float64)
    if kind == "exp":
        return np.exp2(labels) - 1.0
    raise ValueError(f"unknown gain {kind!r}; valid gains: {', '.join(GAINS)}")


def discount(position, kind: str = DISCOUNT, xp=np):
    """Discount of 1-based positions (module docstring). ``xp`` is the array module (numpy, or
    jax.numpy inside a JAX loss): the one formula serves both."""
    if kind == "jarvelin":
        return 1.0 / xp.log2(xp.maximum(position, 2.0))
    if kind == "log2":
        return 1.0 / xp.log2(1.0 + position)
    raise ValueError(f"unknown discount {kind!r}; valid discounts: {', '.join(DISCOUNTS)}")


def discount_slope(position: np.ndarray, d: np.ndarray) -> np.ndarray:
    """d/dp of the log2 discount d = 1 / log2(1 + p), given d: the smoothed losses differentiate
    it at their approximate ranks."""
    return -d ** 2 / ((1.0 + position) * LN2)


def discounts(n: int, kind: str = DISCOUNT, k: int | None = None, xp=np):
    """(n,) discounts of ranks 1..n, 0 from rank k + 1 on (the cut; k=None: no cut)."""
    ranks = xp.arange(n) + 1.0
    d = discount(ranks, kind, xp)
    return d if k is None else xp.where(ranks <= k, d, 0.0)


def cutoff(k: int | None, list_length: int) -> int:
    """How many ranks DCG@k counts in lists of at most ``list_length`` documents."""
    return list_length if k is None else min(k, list_length)


_MAX_GRADES_TO_COUNT = 64


def ideal_dcg_flat(labels: np.ndarray, offsets: np.ndarray, d: np.ndarray, gain_kind: str = GAIN,
                   rel_threshold: float = REL_THRESHOLD) -> np.ndarray:
    """Ideal DCG of each query over the ``len(d)`` top positions, ``d`` their discounts; ``labels``
    flat (float64), grouped by ``offsets``."""
    depth = len(d)
    n_queries = len(offsets) - 1
    lowest, highest = labels.min(initial=0.0), labels.max(initial=0.0)
    if highest - lowest < _MAX_GRADES_TO_COUNT and np.array_equal(labels, np.floor(labels)):
        # Usual case, a few integer grades: the ideal list is each grade repeated as
        # often as it occurs, best grade first. Count grades per query and give each
        # grade the discounts of the positions it fills, from a cumulative sum.
        n_grades = int(highest - lowest) + 1
        grade = (highest - labels).astype(np.int64)  # 0 = best grade
        counts = np.bincount(segment_ids(offsets) * n_grades + grade, minlength=n_queries * n_grades)
        filled_to = np.cumsum(counts.reshape(n_queries, n_grades), axis=1)
        cumulative_discount = np.concatenate([[0.0], np.cumsum(d)])
        start = np.minimum(filled_to - counts.reshape(n_queries, n_grades), depth)
        discount_share = cumulative_discount[np.minimum(filled_to, depth)] - cumulative_discount[start]
        return discount_share @ gain(highest - np.arange(n_grades), gain_kind, rel_threshold)
    # Any labels: the ``depth`` largest of each row, found by a partition, then sorted;
    # much cheaper than sorting long rows.
    negated, mask = pad(-labels, offsets, fill=np.inf)  # padding sorts last
    if depth < negated.shape[1]:
        negated = np.partition(negated, depth - 1, axis=1)[:, :depth]
    ideal_labels = -np.sort(negated, axis=1)
    return np.where(mask[:, :depth], gain(ideal_labels, gain_kind, rel_threshold), 0.0) @ d


def ideal_dcg(labels, mask, k: int | None = None, gain_kind: str = GAIN, rel_threshold: float = REL_THRESHOLD,
              kind: str = DISCOUNT) -> np.ndarray:
    """Ideal DCG@k of each row of padded ``labels`` (its real labels, mask True); k=None means
    the whole row. NDCG's denominator, also used by the losses that divide by it."""
    mask = np.asarray(mask, dtype=bool)
    counts = mask.sum(axis=1)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    depth = cutoff(k, int(counts.max(initial=0)))
    return ideal_dcg_flat(np.asarray(labels, dtype=np.float64)[mask], offsets, discounts(depth, kind), gain_kind,
                          rel_threshold)
