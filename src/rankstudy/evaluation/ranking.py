"""One sort of every query's documents by descending score, shared by all metrics.

Documents with equal scores keep their input order (a stable sort). NaN scores are rejected.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rankstudy.data.blocks import pad, segment_ids, unpad


class Ranking(NamedTuple):
    """One ranking per query, in two forms: padded ``(Q, L)`` and flat.

    The padded arrays hold the real documents of each row first, in rank order,
    and the padding last, so ``mask`` is a prefix of every row. The width L is the
    longest row's number of real documents, so it can be narrower than the input.
    The flat arrays hold the same documents row after row (query ``q`` is
    ``offsets[q]:offsets[q+1]``). Metrics use whichever form is cheaper.
    """

    labels: np.ndarray  # (Q, L) float64 labels in rank order, 0 at padding
    mask: np.ndarray  # (Q, L) bool, True for real documents
    offsets: np.ndarray  # (Q + 1,) int64 boundaries of each query in the flat arrays
    flat_scores: np.ndarray  # (n,) float64 scores, descending within each query
    flat_labels: np.ndarray  # (n,) float64 labels in rank order


def _sort_key(scores: np.ndarray) -> np.ndarray:
    """Ascending key for a descending-score sort. Capped at float max so that a real
    document scored -inf still sorts before padding, whose key is +inf."""
    key = np.negative(scores)
    np.minimum(key, np.finfo(np.float64).max, out=key)
    if np.isnan(key).any():
        raise ValueError("scores contain NaN; a ranking needs every score to be comparable")
    return key


def _rank_order(key: np.ndarray, ranked_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and source column of every real document in stable rank order, flat.
    ``key`` is (Q, L) with +inf at padding; ``ranked_offsets`` counts the real
    documents of each row."""
    order = np.argsort(key, axis=1, kind="stable")
    # The real documents are now the first n of each row. Moving only them, as flat
    # arrays, is much cheaper than take_along_axis over rows that are mostly padding.
    return segment_ids(ranked_offsets), unpad(order, ranked_offsets)


def _ranking_from_flat(offsets: np.ndarray, flat_scores: np.ndarray, flat_labels: np.ndarray) -> Ranking:
    padded_labels, mask = pad(flat_labels, offsets)
    return Ranking(padded_labels, mask, offsets, flat_scores, flat_labels)


def rank(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray) -> Ranking:
    """Sort each row by descending score. Ties keep their input order (stable sort)."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    if not (scores.shape == labels.shape == mask.shape) or scores.ndim != 2:
        raise ValueError(f"scores, labels and mask must be (Q, L) arrays of one shape, got "
                         f"{scores.shape}, {labels.shape}, {mask.shape}")
    key = np.where(mask, _sort_key(np.where(mask, scores, 0.0)), np.inf)
    ranked_offsets = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(np.int64)
    rows, source_columns = _rank_order(key, ranked_offsets)
    return _ranking_from_flat(ranked_offsets, scores[rows, source_columns], labels[rows, source_columns])


def rank_flat(scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> Ranking:
    """:func:`rank` for flat per-row arrays. It pads only the sort key and moves the
    documents straight from the flat arrays (row q, column c of the padding is flat
    row offsets[q] + c)."""
    key, _ = pad(_sort_key(scores), offsets, fill=np.inf)
    rows, source_columns = _rank_order(key, offsets)
    flat_index = offsets[:-1][rows] + source_columns
    return _ranking_from_flat(offsets, scores[flat_index], labels[flat_index])


class RelevantPositions(NamedTuple):
    """Where the binary-relevant documents (label >= rel_threshold) sit in a Ranking."""

    rows: np.ndarray  # query of each relevant document, in rank order within a query
    ranks: np.ndarray  # its 1-based rank
    count: np.ndarray  # (Q,) relevant documents per query
    first: np.ndarray  # (Q,) index into rows/ranks of each query's first relevant document


def relevant_positions(ranking: Ranking, rel_threshold: float = 1.0) -> RelevantPositions:
    found = np.flatnonzero(ranking.flat_labels >= rel_threshold)
    rows = segment_ids(ranking.offsets)[found]
    ranks = (found - ranking.offsets[rows] + 1).astype(np.float64)
    count = np.bincount(rows, minlength=len(ranking.offsets) - 1)
    return RelevantPositions(rows, ranks, count, np.cumsum(count) - count)
