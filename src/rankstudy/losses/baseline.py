"""The baseline losses a practitioner expects: pointwise regression (squared error, RMSE),
RankNet, RankSVM, ListNet and ListMLE (conventions in :mod:`rankstudy.losses`)."""

from __future__ import annotations

import numpy as np

from rankstudy.losses.padded import (
    PAIR_BLOCK_ELEMENTS,
    check_shapes,
    clean,
    masked_log_softmax,
    pair_term_sum,
    plackett_luce_order,
    preference_pairs,
    query_weights,
)


# --------------------------------------------------------------------------- losses

def pointwise_mse(scores, labels, mask):
    """Squared error to the label. Per query: MEAN over its documents of (s - y)^2;
    value = mean over queries with at least one document."""
    s, y, mask = clean(scores, labels, mask)
    n_docs = mask.sum(axis=1)
    weights = query_weights(n_docs > 0) / np.maximum(n_docs, 1)
    residual = s - y  # zero at padding
    value = float(((residual ** 2).sum(axis=1) * weights).sum())
    return value, 2.0 * residual * weights[:, None]


def rmse(scores, labels, mask, *, scale=1.0):
    """allRank's pointwise RMSE: per query sqrt(MEAN over its documents of (scale s - y)^2)
    (allRank's ``no_of_levels`` is ``scale``: its scores are sigmoids in [0, 1]); value = mean over
    queries with at least one document. At a perfect fit (RMSE 0) the gradient is taken as 0."""
    s, y, mask = clean(scores, labels, mask)
    n_docs = mask.sum(axis=1)
    weights = query_weights(n_docs > 0)
    residual = scale * s - y  # zero at padding
    per_query = np.sqrt((residual ** 2).sum(axis=1) / np.maximum(n_docs, 1))
    # d sqrt(mean r^2) / d s_i = scale r_i / (n RMSE)
    slope = np.where(per_query > 0, weights / (np.maximum(n_docs, 1) * np.where(per_query > 0, per_query, 1.0)), 0.0)
    return float(per_query @ weights), scale * residual * slope[:, None]


def ranknet_pair(d):
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
    s, y, mask = clean(scores, labels, mask)
    active, block_terms = preference_pairs(y, mask, ranknet_pair)
    return pair_term_sum(s, mask, active, block_terms, block_elements)


def ranksvm(scores, labels, mask):
    """RankSVM pairwise loss in a differentiable (L-BFGS-friendly) form: the SQUARED hinge
    max(0, 1 - (s_i - s_j))^2 for pairs with y_i > y_j (the plain hinge has a kink that
    quasi-Newton methods handle badly). Per query: SUM over its pairs;
    value = mean over queries with at least one such pair. Computed by sorting each query's
    scores, not by visiting its pairs (:mod:`rankstudy.losses.squared_hinge_numba`)."""
    from rankstudy.losses.squared_hinge_numba import squared_hinge_sums

    # the kernel reads only the real entries, so padding needs no zeroed copy
    s, y = np.ascontiguousarray(scores, dtype=np.float64), np.ascontiguousarray(labels, dtype=np.float64)
    mask = np.ascontiguousarray(mask, dtype=bool)
    check_shapes(s, y, mask)
    grad = np.zeros(s.shape)
    totals, active = squared_hinge_sums(s, y, mask, grad)
    weights = query_weights(active)
    grad *= weights[:, None]
    return float(totals @ weights), grad


def listnet(scores, labels, mask):
    """ListNet top-one cross entropy -sum_i softmax(y)_i log softmax(s)_i over each query's
    real documents. Per query: that one cross entropy; value = mean over queries with at
    least two documents (a single document's loss is identically 0). Gradient per query
    is softmax(s) - softmax(y)."""
    s, y, mask = clean(scores, labels, mask)
    weights = query_weights(mask.sum(axis=1) >= 2)
    log_p = masked_log_softmax(s, mask)
    target = np.where(mask, np.exp(masked_log_softmax(y, mask)), 0.0)
    value = float((-(target * log_p).sum(axis=1) * weights).sum())
    grad = (np.where(mask, np.exp(log_p), 0.0) - target) * weights[:, None]
    return value, grad


def listmle(scores, labels, mask, *, seed=0):
    """ListMLE: Plackett-Luce negative log-likelihood of the permutation pi that sorts the
    documents by label, descending (ties broken reproducibly by ``seed``, see
    :func:`plackett_luce_order`): sum_k [logsumexp(s_pi[k:]) - s_pi[k]].
    Per query: that sum; value = mean over queries with at least two documents."""
    s, y, mask = clean(scores, labels, mask)
    weights = query_weights(mask.sum(axis=1) >= 2)
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
