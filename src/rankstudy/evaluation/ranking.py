"""One sort of every query's documents by descending score, shared by all metrics.

Documents with equal scores keep their input order (a stable sort). NaN scores are rejected.
"""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

import numpy as np

from rankstudy.data.blocks import segment_ids
from rankstudy.data.rankdata import REL_THRESHOLD
from rankstudy.evaluation import dcg


class Ranking:
    """One ranking per query, flat, with padded ``(Q, L)`` views built on first use.

    The flat arrays hold every query's documents in rank order, row after row (query
    ``q`` is ``offsets[q]:offsets[q+1]``). The padded arrays hold the real documents of
    each row first, in rank order, and the padding last, so ``mask`` is a prefix of every
    row. The width L is the longest row's number of real documents, so it can be narrower
    than the input. Metrics use whichever form is cheaper; a metric with a cutoff k needs
    only :meth:`top_labels`, the first k columns.
    """

    def __init__(self, offsets: np.ndarray, flat_labels: np.ndarray, source_scores: np.ndarray,
                 source_index: np.ndarray) -> None:
        self.offsets = offsets  # (Q + 1,) int64 boundaries of each query in the flat arrays
        self.flat_labels = flat_labels  # (n,) float64 labels in rank order
        # the scores in rank order are source_scores[source_index], gathered on first use
        self._source_scores = source_scores
        self._source_index = source_index

    @property
    def width(self) -> int:
        """L: the largest number of documents of a query (0 without queries)."""
        return int(np.diff(self.offsets).max(initial=0))

    @property
    def order(self) -> np.ndarray:
        """(n,) int64 index into the scores given (flattened) of the document at each flat position."""
        return self._source_index

    @cached_property
    def flat_scores(self) -> np.ndarray:
        """(n,) float64 scores, descending within each query."""
        return self._source_scores[self._source_index]

    @cached_property
    def _padded(self) -> tuple[np.ndarray, np.ndarray]:
        labels = np.zeros((len(self.offsets) - 1, self.width))
        labels.ravel()[padded_index(self.offsets, self.width)] = self.flat_labels
        return labels, _prefix_mask(self.offsets, self.width)

    @property
    def labels(self) -> np.ndarray:
        """(Q, L) float64 labels in rank order, 0 at padding."""
        return self._padded[0]

    @property
    def mask(self) -> np.ndarray:
        """(Q, L) bool, True for real documents."""
        return self._padded[1]

    def ideal_dcg(self, discounts: np.ndarray, gain: str, rel_threshold: float) -> np.ndarray:
        """(Q,) ideal DCG of each query over ``len(discounts)`` positions: a function of its
        labels as a set, whatever their order (:func:`~rankstudy.evaluation.dcg.ideal_dcg_flat`)."""
        return dcg.ideal_dcg_flat(self.flat_labels, self.offsets, discounts, gain, rel_threshold)

    def top_labels(self, k: int) -> np.ndarray:
        """``labels[:, :k]`` (k <= L) without padding the whole ranking: (Q, k) float64
        labels of the top k documents of each query, 0 past a query's end."""
        if "_padded" in self.__dict__:
            return self.labels[:, :k]
        if not len(self.flat_labels):
            return np.zeros((len(self.offsets) - 1, k))
        index = self.offsets[:-1, None] + np.arange(k)
        return np.where(_prefix_mask(self.offsets, k), self.flat_labels[np.minimum(index, len(self.flat_labels) - 1)],
                        0.0)


def padded_index(offsets: np.ndarray, width: int) -> np.ndarray:
    """Flat position in a (Q, width) array of every row of the flat layout ``offsets``:
    row offsets[q] + c is at q * width + c."""
    lengths = np.diff(offsets)
    return np.arange(offsets[-1]) + np.repeat(np.arange(len(lengths)) * width - offsets[:-1], lengths)


def _prefix_mask(offsets: np.ndarray, width: int) -> np.ndarray:
    """(Q, width) bool: True in the first min(n_q, width) columns of row q."""
    return np.arange(width) < np.diff(offsets)[:, None]


def sort_key(scores: np.ndarray) -> np.ndarray:
    """Ascending key for a descending-score sort. Capped at float max so that a real
    document scored -inf still sorts before padding, whose key is +inf."""
    key = np.negative(scores)
    np.minimum(key, np.finfo(np.float64).max, out=key)
    if np.isnan(key).any():
        raise ValueError("scores contain NaN; a ranking needs every score to be comparable")
    return key


def _rank_order(key: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Source column of every real document in stable rank order, flat. ``key`` is (Q, L)
    with +inf at padding; ``index`` is :func:`padded_index` of the ranked layout (the real
    documents of each row, counted) in an array of L columns."""
    order = np.argsort(key, axis=1, kind="stable")
    # The real documents are now the first n of each row. Moving only them, as flat
    # arrays, is much cheaper than take_along_axis over rows that are mostly padding.
    return order.ravel()[index]


def rank(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray) -> Ranking:
    """Sort each row by descending score. Ties keep their input order (stable sort)."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    if not (scores.shape == labels.shape == mask.shape) or scores.ndim != 2:
        raise ValueError(f"scores, labels and mask must be (Q, L) arrays of one shape, got "
                         f"{scores.shape}, {labels.shape}, {mask.shape}")
    key = np.where(mask, sort_key(np.where(mask, scores, 0.0)), np.inf)
    counts = mask.sum(axis=1)
    ranked_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    index = padded_index(ranked_offsets, scores.shape[1])
    # row q, column c of the input is flat element q * L + c
    source = np.repeat(np.arange(len(counts)) * scores.shape[1], counts) + _rank_order(key, index)
    return Ranking(ranked_offsets, labels.ravel()[source], scores.ravel(), source)


def rank_flat(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> Ranking:
    """:func:`rank` for flat per-row arrays. It pads only the sort key and moves the
    documents straight from the flat arrays (row q, column c of the padding is flat
    row offsets[q] + c)."""
    lengths = np.diff(offsets)
    width = int(lengths.max(initial=0))
    index = padded_index(offsets, width)
    key = np.full((len(lengths), width), np.inf)  # padding sorts last
    key.ravel()[index] = sort_key(scores)
    source = np.repeat(offsets[:-1], lengths) + _rank_order(key, index)
    return Ranking(offsets, labels[source], scores, source)


class RelevantPositions(NamedTuple):
    """Where the binary-relevant documents (label >= rel_threshold) sit in a Ranking."""

    rows: np.ndarray  # query of each relevant document, in rank order within a query
    ranks: np.ndarray  # its 1-based rank
    count: np.ndarray  # (Q,) relevant documents per query
    first: np.ndarray  # (Q,) index into rows/ranks of each query's first relevant document


def relevant_positions(ranking: Ranking, rel_threshold: float = REL_THRESHOLD) -> RelevantPositions:
    found = np.flatnonzero(ranking.flat_labels >= rel_threshold)
    rows = segment_ids(ranking.offsets)[found]
    ranks = (found - ranking.offsets[rows] + 1).astype(np.float64)
    count = np.bincount(rows, minlength=len(ranking.offsets) - 1)
    return RelevantPositions(rows, ranks, count, np.cumsum(count) - count)
