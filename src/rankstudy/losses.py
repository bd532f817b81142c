"""Ranking losses as small pure functions of padded scores, labels and a mask.

Every loss has the signature ``loss(scores, labels, mask, **options) -> (value, grad)``:

* ``scores``, ``labels``: float ``(Q, L)`` arrays, one row per query, padded
  (see :func:`rankstudy.data.pad`); ``mask`` is the bool ``(Q, L)`` array of
  real entries. Padded entries never affect the value and get zero gradient,
  whatever they hold (even NaN/inf).
* ``value``: a Python float, the MEAN over the queries that have at least one
  loss term (what counts as a term is in each docstring); queries without
  terms are ignored, so e.g. an all-equal-label query cannot dilute a pairwise
  loss. No terms at all gives ``(0.0, zeros)``.
* ``grad``: the analytic d value / d scores, same shape as ``scores``.

All queries are processed at once on the padded arrays; pairwise losses build
``(Qc, Lc, Lc)`` blocks over chunks of queries with a bounded number of
elements, so memory stays bounded even with 1,000-document queries.

Adding a loss = one function here + one entry in :data:`LOSSES`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

LossFn = Callable[..., tuple[float, np.ndarray]]

# Max elements of one (Qc, Lc, Lc) pairwise block: 2 MB per float64 temporary. Small
# enough to stay in cache (measured faster than 2^20-2^22), large enough to amortise the loop.
PAIR_BLOCK_ELEMENTS = 1 << 18


# --------------------------------------------------------------------------- helpers

def _clean(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray):
    """float64 copies with padded entries zeroed, so padding garbage can never leak in."""
    mask = np.asarray(mask, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    if scores.ndim != 2 or scores.shape != labels.shape or scores.shape != mask.shape:
        raise ValueError(
            f"scores, labels and mask must be 2-D arrays of one shape, got "
            f"{scores.shape}, {labels.shape}, {mask.shape}"
        )
    return np.where(mask, scores, 0.0), np.where(mask, labels, 0.0), mask


def _query_weights(active: np.ndarray) -> np.ndarray:
    """1/n_active for each active query, 0 otherwise: turns per-query sums into the mean."""
    n_active = int(active.sum())
    return active / n_active if n_active else np.zeros(active.shape)


def _masked_log_softmax(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Row-wise log softmax over real entries (0 at padding); shift by the row max for stability."""
    xm = np.where(mask, x, -np.inf)
    top = xm.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # rows without real entries
    total = np.exp(xm - top).sum(axis=1, keepdims=True)
    lse = np.log(np.where(total > 0, total, 1.0)) + top
    return np.where(mask, x - lse, 0.0)


def _pairwise_sum(s, y, mask, pair_term, block_elements):
    """Sum of ``pair_term(s_i - s_j)`` over pairs with ``y_i > y_j`` within each query,
    averaged over queries that have such a pair. ``pair_term(d) -> (value, dvalue/dd)``
    is evaluated on the real pairs only (typically well under half of the block).

    Queries are sorted by their last real column and chunked so that each block
    (Qc, Lc, Lc) holds at most ``block_elements`` entries; Lc is the widest query
    of the chunk, so a few long queries don't inflate the blocks of the short ones.
    """
    Q, L = s.shape
    grad = np.zeros((Q, L))
    top = np.where(mask, y, -np.inf).max(axis=1)
    bottom = np.where(mask, y, np.inf).min(axis=1)
    active = top > bottom  # has at least one pair with different labels
    n_active = int(active.sum())
    if not n_active:
        return 0.0, grad
    width = (mask * np.arange(1, L + 1)).max(axis=1)  # last real column + 1
    queries = np.flatnonzero(active)
    queries = queries[np.argsort(width[queries], kind="stable")]
    widths = width[queries]
    total = 0.0
    start = 0
    while start < len(queries):
        # largest chunk [start, stop) whose block (stop-start) * w^2 fits the budget (at least 1 query)
        cost = np.arange(1, len(queries) - start + 1) * widths[start:].astype(np.float64) ** 2
        stop = start + max(1, int(np.searchsorted(cost, block_elements, side="right")))
        q, w = queries[start:stop], int(widths[stop - 1])
        sc = s[q, :w]
        yc = np.where(mask[q, :w], y[q, :w], np.nan)  # NaN compares False: no pairs with padding
        is_pair = yc[:, :, None] > yc[:, None, :]
        value, slope = pair_term((sc[:, :, None] - sc[:, None, :])[is_pair])
        total += float(value.sum())
        slope_block = np.zeros(is_pair.shape)
        slope_block[is_pair] = slope
        # d(s_i - s_j)/ds_i = +1 (row sums), d/ds_j = -1 (column sums); matmul with ones
        # is ~2x faster than .sum() here (the column sum is a strided reduction)
        ones = np.ones(w)
        grad[q, :w] = slope_block @ ones - ones @ slope_block
        start = stop
    # every active query has weight 1/n_active, so the mean is one division at the end
    return total / n_active, grad / n_active


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Vectorised splitmix64 finaliser (uint64 arithmetic wraps, as intended)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def plackett_luce_order(labels: np.ndarray, mask: np.ndarray, seed: int = 0) -> np.ndarray:
    """Column order (Q, L) that sorts each query's real documents by label, descending,
    followed by its padding. Label ties are broken by a hash of (seed, query row, column),
    so the order is reproducible for a fixed seed and does not depend on the padded
    width or on the other queries in the batch.
    """
    mask = np.asarray(mask, dtype=bool)
    labels = np.where(mask, np.asarray(labels, dtype=np.float64), 0.0)
    Q, L = mask.shape
    cell = (np.arange(Q, dtype=np.uint64)[:, None] << np.uint64(32)) | np.arange(L, dtype=np.uint64)[None, :]
    tie_break = _splitmix64(cell ^ _splitmix64(np.full(1, seed & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)))
    # lexsort: last key is primary -> real docs first, then label descending, then tie-break
    return np.lexsort((tie_break, -labels, ~mask), axis=-1)


# --------------------------------------------------------------------------- losses

def pointwise_mse(scores, labels, mask):
    """Squared error to the label. Per query: MEAN over its documents of (s - y)^2;
    value = mean over queries with at least one document."""
    s, y, mask = _clean(scores, labels, mask)
    n_docs = mask.sum(axis=1)
    weights = _query_weights(n_docs > 0) / np.maximum(n_docs, 1)
    residual = s - y  # zero at padding
    value = float(((residual ** 2).sum(axis=1) * weights).sum())
    return value, 2.0 * residual * weights[:, None]


def _ranknet_pair(d):
    # softplus(-d) and -sigmoid(-d) from one exp(-|d|): stable for any d, and much
    # cheaper than np.logaddexp + scipy expit
    e = np.exp(-np.abs(d))
    value = np.maximum(-d, 0.0) + np.log1p(e)
    sigmoid_minus_d = np.where(d >= 0, e, 1.0) / (1.0 + e)
    return value, -sigmoid_minus_d


def ranknet(scores, labels, mask, *, block_elements=PAIR_BLOCK_ELEMENTS):
    """RankNet pairwise logistic loss log(1 + exp(-(s_i - s_j))) for pairs with y_i > y_j.
    Per query: SUM over its pairs (so queries with many pairs weigh more);
    value = mean over queries with at least one such pair."""
    s, y, mask = _clean(scores, labels, mask)
    return _pairwise_sum(s, y, mask, _ranknet_pair, block_elements)


def _squared_hinge_pair(d):
    h = np.maximum(0.0, 1.0 - d)
    return h * h, -2.0 * h


def ranksvm(scores, labels, mask, *, block_elements=PAIR_BLOCK_ELEMENTS):
    """RankSVM pairwise loss in a differentiable (L-BFGS-friendly) form: the SQUARED hinge
    max(0, 1 - (s_i - s_j))^2 for pairs with y_i > y_j (the plain hinge has a kink that
    quasi-Newton methods handle badly). Per query: SUM over its pairs;
    value = mean over queries with at least one such pair."""
    s, y, mask = _clean(scores, labels, mask)
    return _pairwise_sum(s, y, mask, _squared_hinge_pair, block_elements)


def listnet(scores, labels, mask):
    """ListNet top-one cross entropy -sum_i softmax(y)_i log softmax(s)_i over each query's
    real documents. Per query: that one cross entropy; value = mean over queries with at
    least two documents (a single document's loss is identically 0). Gradient per query
    is softmax(s) - softmax(y)."""
    s, y, mask = _clean(scores, labels, mask)
    weights = _query_weights(mask.sum(axis=1) >= 2)
    log_p = _masked_log_softmax(s, mask)
    target = np.where(mask, np.exp(_masked_log_softmax(y, mask)), 0.0)
    value = float((-(target * log_p).sum(axis=1) * weights).sum())
    grad = (np.where(mask, np.exp(log_p), 0.0) - target) * weights[:, None]
    return value, grad


def listmle(scores, labels, mask, *, seed=0):
    """ListMLE: Plackett-Luce negative log-likelihood of the permutation pi that sorts the
    documents by label, descending (ties broken reproducibly by ``seed``, see
    :func:`plackett_luce_order`): sum_k [logsumexp(s_pi[k:]) - s_pi[k]].
    Per query: that sum; value = mean over queries with at least two documents."""
    s, y, mask = _clean(scores, labels, mask)
    weights = _query_weights(mask.sum(axis=1) >= 2)
    order = plackett_luce_order(y, mask, seed)
    s_sorted = np.take_along_axis(s, order, axis=1)
    real = np.take_along_axis(mask, order, axis=1)
    x = np.where(real, s_sorted, -np.inf)
    # reverse cumulative logsumexp via logaddexp.accumulate: stable even when a suffix's
    # scores are far below the query maximum (a max-shifted cumsum of exp would underflow)
    suffix_lse = np.logaddexp.accumulate(x[:, ::-1], axis=1)[:, ::-1]
    value = float((np.where(real, suffix_lse - s_sorted, 0.0).sum(axis=1) * weights).sum())
    # d/ds_j = sum_{k<=j} exp(s_j - lse_k) - 1, with the sum done in log space;
    # lse_k >= s_j for k <= j, so exp(...) <= j + 1 never overflows
    log_prefix = np.logaddexp.accumulate(np.where(real, -suffix_lse, -np.inf), axis=1)
    grad_sorted = np.where(real, np.exp(np.where(real, s_sorted + log_prefix, 0.0)) - 1.0, 0.0)
    grad = np.zeros_like(s)
    np.put_along_axis(grad, order, grad_sorted * weights[:, None], axis=1)
    return value, grad


LOSSES: dict[str, LossFn] = {
    "pointwise_mse": pointwise_mse,
    "ranknet": ranknet,
    "ranksvm": ranksvm,
    "listnet": listnet,
    "listmle": listmle,
}


def get_loss(name: str) -> LossFn:
    try:
        return LOSSES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown loss {name!r}; valid losses: {', '.join(sorted(LOSSES))}") from None

