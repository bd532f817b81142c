"""Tran et al.'s l2 (Eqs. 6-7): 1 - M for a rank metric M whose rank indicators are smoothed.

Same convention as every loss in :mod:`rankstudy.losses` (padded ``(Q, L)`` arrays, padding inert, value =
mean over queries with terms, analytic gradient). Every indicator ``delta[f_j > f_i]`` in a
metric becomes ``sigmoid((f_j - f_i) / temperature)`` (Eq. 7 is temperature = 1); as the
temperature goes to 0 on tie-free scores each loss tends to 1 - the exact metric of
:mod:`rankstudy.evaluation.metrics`. With sigma_ij = sigmoid((f_j - f_i) / temperature), j != i real:

``smoothed_ndcg`` (NDCG@k, Table 1)
    pi_i = 1 + sum_j sigma_ij, DCG = sum_i (2^r_i - 1) / log2(1 + pi_i) * cut_i, divided by
    the exact ideal DCG@k. The top-k cut is smoothed too: cut_i = sigmoid((k + 1/2 - pi_i) /
    temperature), which tends to [rank_i <= k] (pi_i tends to an integer); a hard cut on
    pi_i would make the loss a step function again. k=None: whole list, no cut.
``smoothed_err`` (ERR, Table 1, R_i = (2^r_i - 1) / 2^(|L| - 1), |L| = ``n_levels``)
    sum_i R_i / pi_i * prod_j (1 - R_j sigma_ij): the exact ERR's prod_{j above i} (1 - R_j)
    is prod_j (1 - R_j delta[f_j > f_i]), and the indicator is smoothed there.
``smoothed_mrr``
    the same cascade with R_i = [r_i >= rel_threshold]: sum over relevant i of
    (1 / pi_i) * prod_{relevant j} (1 - sigma_ij), i.e. the smoothed reciprocal rank of the
    first relevant document (exact when one document is relevant, as in the paper's QA task).

A query has terms when it has at least two documents and the metric is defined (some
document relevant: ideal DCG > 0, some R > 0); the others have a metric that cannot depend
on the scores. pi and the pair sums are :mod:`rankstudy.losses.approx_rank`'s, shared with ApproxNDCG
(which is ``smoothed_ndcg`` without a cut); gains, discounts and the ideal DCG are
:mod:`rankstudy.evaluation.dcg`'s.
"""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import REL_THRESHOLD
from rankstudy.evaluation import dcg
from rankstudy.losses.approx_rank import (
    above_kernel,
    approx_ranks,
    approx_ranks_vjp,
    pair_sums,
    pair_sums_vjp,
    sigmoid_pair,
)
from rankstudy.losses.padded import PAIR_BLOCK_ELEMENTS, clean, label_levels, query_weights

def _survival_kernel(x, stop):
    """log(1 - stop_j sigmoid(x)): the chance j, if ranked above i, does not stop the user."""
    up, down = sigmoid_pair(x)
    sure = stop >= 1.0
    # 1 - stop * up = (1 - stop) + stop * down, exact even when up rounds to 1
    rest = np.where(sure, 1.0, (1.0 - stop) + stop * down)
    # stop = 1: log(down) = -softplus(x) stays finite when down underflows
    log_down = -(np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x))))
    value = np.where(sure, log_down, np.log(rest))
    slope = np.where(sure, -up, -stop * up * down / rest)
    return value, slope


def smoothed_ndcg(scores, labels, mask, *, k: int | None = None, temperature: float = 1.0,
                  block_elements: int = PAIR_BLOCK_ELEMENTS):
    """1 - smoothed NDCG@k (see the module docstring); value = mean over queries with at
    least two documents and a positive ideal DCG@k."""
    T = float(temperature)
    s, y, mask = clean(scores, labels, mask)
    ideal = dcg.ideal_dcg(y, mask, k)
    active = (mask.sum(axis=1) >= 2) & (ideal > 0)
    weights = query_weights(active)
    position = approx_ranks(s, mask, active, T, block_elements)
    discount = dcg.discount(position)
    d_discount = dcg.discount_slope(position, discount)
    if k is None:
        cut, d_cut = 1.0, 0.0
    else:
        cut, _ = sigmoid_pair((k + 0.5 - position) / T)
        d_cut = -cut * (1.0 - cut) / T
    # gain is 0 at padding, and the scale is 0 off the active queries
    gain = np.where(mask, dcg.gain(y), 0.0)
    scale = np.divide(weights, ideal, out=np.zeros_like(ideal), where=active)[:, None]
    ndcg = (gain * discount * cut * scale).sum(axis=1)  # already weighted by 1/n_active
    value = float(weights.sum() - ndcg.sum())
    cotangent = -scale * gain * (d_discount * cut + discount * d_cut)  # d value / d pi_i
    grad = approx_ranks_vjp(s, mask, active, cotangent, T, block_elements)
    return value, grad


def _smoothed_cascade(s, mask, stop, temperature, block_elements):
    """1 - sum_i stop_i / pi_i * prod_{j != i} (1 - stop_j sigma_ij), mean over queries with
    at least two documents and some stop_i > 0."""
    T = float(temperature)
    active = (mask.sum(axis=1) >= 2) & (stop > 0).any(axis=1)
    weights = query_weights(active)[:, None]
    kernels, values = [above_kernel, _survival_kernel], [np.ones(s.shape), stop]
    above, log_reached = pair_sums(s, mask, active, kernels, values, T, block_elements)
    term = np.where(active[:, None], stop * np.exp(log_reached) / (1.0 + above), 0.0)
    value = float(weights.sum() - (weights * term).sum())
    cotangents = [weights * term / (1.0 + above), -weights * term]  # d value / d above, d log_reached
    grad = pair_sums_vjp(s, mask, active, kernels, values, cotangents, T, block_elements)
    return value, grad


def smoothed_err(scores, labels, mask, *, temperature: float = 1.0, n_levels: int | None = None,
                 block_elements: int = PAIR_BLOCK_ELEMENTS):
    """1 - smoothed ERR with R = (2^r - 1) / 2^(|L| - 1), |L| = ``n_levels`` (None -> largest
    label + 1, the same R as :func:`rankstudy.evaluation.metrics.err` with its default max_label)."""
    s, y, mask = clean(scores, labels, mask)
    levels = label_levels(y, mask, n_levels)
    stop = np.where(mask, np.expm1(y * np.log(2.0)) / 2.0 ** (levels - 1), 0.0)
    return _smoothed_cascade(s, mask, stop, temperature, block_elements)


def smoothed_mrr(scores, labels, mask, *, temperature: float = 1.0, rel_threshold: float = REL_THRESHOLD,
                 block_elements: int = PAIR_BLOCK_ELEMENTS):
    """1 - smoothed reciprocal rank of the first document with label >= rel_threshold."""
    s, y, mask = clean(scores, labels, mask)
    stop = (mask & (y >= rel_threshold)).astype(np.float64)
    return _smoothed_cascade(s, mask, stop, temperature, block_elements)
