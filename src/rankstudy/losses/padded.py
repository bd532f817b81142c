"""What every loss over padded queries shares: the argument checks, the per-query averaging,
the label permutation of the Plackett-Luce family, the number of label levels, and the
bounded blocks in which pairwise terms are evaluated.

A loss is ``loss(scores, labels, mask, **options) -> (value, grad)`` on padded ``(Q, L)``
arrays (see :mod:`rankstudy.losses`).
"""

from __future__ import annotations

from typing import Callable, Iterator, NamedTuple

import numpy as np

LossFn = Callable[..., tuple[float, np.ndarray]]

# Max elements of one (Qc, Lc, Lc) pairwise block: 2 MB per float64 temporary. Small
# enough to stay in cache (measured faster than 2^20-2^22), large enough to amortise the loop.
PAIR_BLOCK_ELEMENTS = 1 << 18


# --------------------------------------------------------------------------- arguments and averaging

def check_shapes(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray) -> None:
    if scores.ndim != 2 or scores.shape != labels.shape or scores.shape != mask.shape:
        raise ValueError(
            f"scores, labels and mask must be 2-D arrays of one shape, got "
            f"{scores.shape}, {labels.shape}, {mask.shape}"
        )


def clean(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray):
    """float64 copies with padded entries zeroed, so padding garbage can never leak in."""
    mask = np.asarray(mask, dtype=bool)
    scores = np.array(scores, dtype=np.float64)  # copies
    labels = np.array(labels, dtype=np.float64)
    check_shapes(scores, labels, mask)
    # zeroing the padding of the copies in place is cheaper than np.where(mask, x, 0.0)
    padding = ~mask
    np.copyto(scores, 0.0, where=padding)
    np.copyto(labels, 0.0, where=padding)
    return scores, labels, mask


def query_weights(active: np.ndarray) -> np.ndarray:
    """1/n_active for each active query, 0 otherwise: turns per-query sums into the mean."""
    n_active = int(active.sum())
    return active / n_active if n_active else np.zeros(active.shape)


def masked_log_softmax(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Row-wise log softmax over real entries (0 at padding); shift by the row max for stability."""
    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    mask = np.asarray(mask, dtype=bool)
    top = np.max(x, axis=1, where=mask, initial=-np.inf, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # rows without real entries
    # One (Q, L) array, zero at padding throughout: the shifted exponentials, then the result.
    # Only real entries are computed (exp(-inf) = 0 at padding would be slow to compute).
    work = np.zeros(np.broadcast_shapes(x.shape, mask.shape), dtype=np.result_type(x, -np.inf))
    np.subtract(x, top, out=work, where=mask)
    np.exp(work, out=work, where=mask)
    total = work.sum(axis=1, keepdims=True)
    lse = np.log(np.where(total > 0, total, 1.0)) + top
    np.subtract(x, lse, out=work, where=mask)
    return work


def label_levels(labels: np.ndarray, mask: np.ndarray, n_levels: int | None = None) -> int:
    """|L|, the number of label levels 0..|L|-1: ``n_levels`` if given (checked against the
    labels), else the largest real label + 1 (at least 1, also for all-negative labels)."""
    top = float(np.where(np.asarray(mask, dtype=bool), labels, -np.inf).max(initial=-np.inf))
    if n_levels is None:
        return int(np.floor(max(top, 0.0))) + 1
    n_levels = int(n_levels)
    if n_levels < 1 or top > n_levels - 1:
        raise ValueError(f"n_levels={n_levels} must be >= 1 and cover the labels, which go up to {top:g} "
                         f"(labels are 0..n_levels-1)")
    return n_levels


# --------------------------------------------------------------------------- label permutation

def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Vectorised splitmix64 finaliser (uint64 arithmetic wraps, as intended)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def plackett_luce_order(labels: np.ndarray, mask: np.ndarray, seed: int = 0) -> np.ndarray:
    """Column order (Q, L) that sorts each query's real documents by label, descending,
    followed by its padding. Label ties are broken by a hash of (seed, the query's labels,
    column): the order is reproducible for a fixed seed and depends on the query alone, not on
    its row in the batch, the padded width or the other queries (a query's row changes with
    every batch a mini-batch solver draws).
    """
    mask = np.asarray(mask, dtype=bool)
    labels = np.where(mask, np.asarray(labels, dtype=np.float64), 0.0) + 0.0  # + 0.0: -0.0 hashes as 0.0
    column = np.arange(mask.shape[1], dtype=np.uint64)[None, :]
    # the query's key: a sum over its real documents of a hash of (column, label), which wraps
    # (uint64); the labels are all the loss sees of a query
    cell = _splitmix64(labels.view(np.uint64) ^ _splitmix64(column + np.uint64(0x5851F42D4C957F2D)))
    key = np.where(mask, cell, np.uint64(0)).sum(axis=1, dtype=np.uint64)
    key ^= _splitmix64(np.full(1, seed & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64))
    tie_break = _splitmix64(column ^ _splitmix64(key)[:, None])
    # lexsort: last key is primary -> real docs first, then label descending, then tie-break
    return np.lexsort((tie_break, -labels, ~mask), axis=-1)


def true_positions(order: np.ndarray) -> np.ndarray:
    """1-based position of each column in the permutation ``order`` (inverse permutation + 1)."""
    positions = np.empty(order.shape)
    ranks = np.broadcast_to(np.arange(1.0, order.shape[1] + 1), order.shape)
    np.put_along_axis(positions, order, ranks, axis=1)
    return positions


# --------------------------------------------------------------------------- bounded blocks

def query_chunks(mask: np.ndarray, queries: np.ndarray, block_elements: int,
                 entries: Callable[[np.ndarray], np.ndarray]) -> Iterator[tuple[np.ndarray, int]]:
    """``queries`` sorted by their last real column and cut into chunks ``(q, width)`` whose
    blocks hold at most ``block_elements`` entries (at least one query per chunk), where a
    query of width w needs ``entries(w)`` of them; width is the widest query of the chunk, so
    a few long queries don't inflate the blocks of the short ones."""
    mask = np.asarray(mask, dtype=bool)
    width = (mask * np.arange(1, mask.shape[1] + 1)).max(axis=1, initial=0)  # last real column + 1
    queries = np.asarray(queries, dtype=np.int64)
    queries = queries[np.argsort(width[queries], kind="stable")]
    widths = width[queries].astype(np.float64)
    start = 0
    while start < len(queries):
        cost = np.arange(1, len(queries) - start + 1) * entries(widths[start:])
        stop = start + max(1, int(np.searchsorted(cost, block_elements, side="right")))
        yield queries[start:stop], int(widths[stop - 1])
        start = stop


class PairBlock(NamedTuple):
    """One bounded piece of the pairwise (Q, L, L) array: documents i in ``rows`` x
    documents j in ``0:width`` of the padded rows ``queries``."""

    queries: np.ndarray  # (Qc,) padded row indices
    rows: slice  # columns of the documents i
    width: int  # columns 0..width-1 hold every real document of these queries


def pair_blocks(mask: np.ndarray, queries: np.ndarray,
                block_elements: int = PAIR_BLOCK_ELEMENTS) -> Iterator[PairBlock]:
    """Cover every (i, j) pair of ``queries`` with blocks of at most ``block_elements``
    entries (Qc * rows * width): chunks of queries (:func:`query_chunks`, Qc * width^2),
    plus row tiles, so that a single query too wide for the budget is split into bands of
    rows and memory stays bounded however long the query."""
    for q, w in query_chunks(mask, queries, block_elements, lambda widths: widths ** 2):
        rows_per_block = max(1, int(block_elements) // max(1, len(q) * w))  # < w only for a lone wide query
        for first in range(0, w, rows_per_block):
            yield PairBlock(q, slice(first, min(w, first + rows_per_block)), w)


BlockTerms = Callable[[PairBlock, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


def pair_term_sum(s: np.ndarray, mask: np.ndarray, active: np.ndarray, block_terms: BlockTerms,
                  block_elements: int = PAIR_BLOCK_ELEMENTS) -> tuple[float, np.ndarray]:
    """Sum of pair terms of d = s_i - s_j over the active queries, averaged over them.

    ``block_terms(block, d) -> (is_pair, value, slope)``: for the block's (Qc, rows, width)
    score differences ``d`` it selects the pairs that have a term (bool, same shape; never
    padding) and returns, for those pairs in ``d[is_pair]`` order, the (weighted) term and
    its derivative with respect to d.
    """
    grad = np.zeros(s.shape)
    n_active = int(active.sum())
    if not n_active:
        return 0.0, grad
    total = 0.0
    for block in pair_blocks(mask, np.flatnonzero(active), block_elements):
        q, rows, w = block
        sc = s[q, :w]
        d = sc[:, rows, None] - sc[:, None, :]
        is_pair, value, slope = block_terms(block, d)
        total += float(value.sum())
        slope_block = np.zeros(d.shape)
        slope_block[is_pair] = slope
        # d(s_i - s_j)/ds_i = +1 (row sums), d/ds_j = -1 (column sums); matmul with ones
        # is faster than .sum() for the strided column reduction
        grad[q, rows] += slope_block @ np.ones(w)
        grad[q, :w] -= np.ones(slope_block.shape[1]) @ slope_block
    # every active query has weight 1/n_active, so the mean is one division at the end
    return total / n_active, grad / n_active


def preference_pairs(y: np.ndarray, mask: np.ndarray, pair_term: Callable) -> tuple[np.ndarray, BlockTerms]:
    """The active queries (some pair with different labels) and the block terms of
    ``pair_term(d) -> (value, dvalue/dd)`` over the pairs y_i > y_j: the usual pairwise loss."""
    y_real = np.where(mask, y, np.nan)  # NaN compares False: padding is in no pair
    active = np.where(mask, y, -np.inf).max(axis=1) > np.where(mask, y, np.inf).min(axis=1)

    def block_terms(block: PairBlock, d: np.ndarray):
        q, rows, w = block
        is_pair = y_real[q, rows][:, :, None] > y_real[q, :w][:, None, :]
        value, slope = pair_term(d[is_pair])
        return is_pair, value, slope

    return active, block_terms
