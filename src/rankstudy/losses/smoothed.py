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
on the scores. Pair sums run over bounded blocks (:func:`rankstudy.losses.padded.pair_blocks`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from rankstudy.evaluation.metrics import ideal_dcg
from rankstudy.losses.padded import PAIR_BLOCK_ELEMENTS, clean, label_levels, pair_blocks, query_weights

# kernel(x, v_j) -> (k, dk/dx) with x = (f_j - f_i) / temperature and v_j a value of document j
Kernel = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _sigmoid_pair(x):
    """sigmoid(x) and sigmoid(-x) from one exp(-|x|): no overflow, no cancellation."""
    e = np.exp(-np.abs(x))
    big, small = 1.0 / (1.0 + e), e / (1.0 + e)
    return np.where(x >= 0, big, small), np.where(x >= 0, small, big)


def _above_kernel(x, _):
    """Smoothed delta[f_j > f_i]: summed over j it is pi_i - 1."""
    up, down = _sigmoid_pair(x)
    return up, up * down


def _survival_kernel(x, stop):
    """log(1 - stop_j sigmoid(x)): the chance j, if ranked above i, does not stop the user."""
    up, down = _sigmoid_pair(x)
    sure = stop >= 1.0
    # 1 - stop * up = (1 - stop) + stop * down, exact even when up rounds to 1
    rest = np.where(sure, 1.0, (1.0 - stop) + stop * down)
    # stop = 1: log(down) = -softplus(x) stays finite when down underflows
    log_down = -(np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x))))
    value = np.where(sure, log_down, np.log(rest))
    slope = np.where(sure, -up, -stop * up * down / rest)
    return value, slope


def _block_x(s, mask, block, temperature):
    """x_ij = (s_j - s_i) / temperature over the block, and which (i, j) are real, i != j."""
    q, rows, w = block
    sc = s[q, :w]
    x = (sc[:, None, :] - sc[:, rows, None]) / temperature
    real = mask[q, rows][:, :, None] & mask[q, :w][:, None, :]
    valid = real & (np.arange(w)[rows][:, None] != np.arange(w)[None, :])
    return x, valid


def smoothed_sums(s, mask, active, kernels: list[Kernel], values: list[np.ndarray], temperature: float,
                  block_elements: int = PAIR_BLOCK_ELEMENTS) -> list[np.ndarray]:
    """For each kernel c: sums[c][q, i] = sum_{j != i, real} kernel_c(x_ij, values[c][q, j])
    on the active queries (0 elsewhere)."""
    sums = [np.zeros(s.shape) for _ in kernels]
    for block in pair_blocks(mask, np.flatnonzero(active), block_elements):
        q, rows, w = block
        x, valid = _block_x(s, mask, block, temperature)
        for total, kernel, v in zip(sums, kernels, values):
            k, _ = kernel(x, v[q, :w][:, None, :])
            total[q, rows] = np.where(valid, k, 0.0) @ np.ones(w)
    return sums


def smoothed_sums_vjp(s, mask, active, kernels: list[Kernel], values: list[np.ndarray],
                      cotangents: list[np.ndarray], temperature: float,
                      block_elements: int = PAIR_BLOCK_ELEMENTS) -> np.ndarray:
    """Gradient of sum_c sum_i cotangents[c][q, i] * sums[c][q, i] with respect to s.

    d sums_i / d s_j = K_ij and d sums_i / d s_i = -sum_j K_ij with K_ij = k'(x_ij) / T,
    so grad_j += sum_i u_i K_ij (columns) and grad_i -= u_i sum_j K_ij (rows).
    """
    grad = np.zeros(s.shape)
    for block in pair_blocks(mask, np.flatnonzero(active), block_elements):
        q, rows, w = block
        x, valid = _block_x(s, mask, block, temperature)
        for kernel, v, u in zip(kernels, values, cotangents):
            _, slope = kernel(x, v[q, :w][:, None, :])
            k_prime = np.where(valid, slope, 0.0) / temperature
            u_rows = u[q, rows]
            grad[q, :w] += (u_rows[:, None, :] @ k_prime)[:, 0, :]
            grad[q, rows] -= u_rows * (k_prime @ np.ones(w))
    return grad


def _check_temperature(temperature) -> float:
    temperature = float(temperature)
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    return temperature


def smoothed_ndcg(scores, labels, mask, *, k: int | None = None, temperature: float = 1.0,
                  block_elements: int = PAIR_BLOCK_ELEMENTS):
    """1 - smoothed NDCG@k (see the module docstring); value = mean over queries with at
    least two documents and a positive ideal DCG@k."""
    if k is not None and (int(k) != k or k < 1):
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    T = _check_temperature(temperature)
    s, y, mask = clean(scores, labels, mask)
    ideal = ideal_dcg(y, mask, k)
    active = (mask.sum(axis=1) >= 2) & (ideal > 0)
    weights = query_weights(active)
    ones = np.ones(s.shape)
    (above,) = smoothed_sums(s, mask, active, [_above_kernel], [ones], T, block_elements)
    position = 1.0 + above
    log_pos = np.log2(1.0 + position)
    discount = 1.0 / log_pos
    d_discount = -discount ** 2 / ((1.0 + position) * np.log(2.0))
    if k is None:
        cut, d_cut = 1.0, 0.0
    else:
        cut, _ = _sigmoid_pair((k + 0.5 - position) / T)
        d_cut = -cut * (1.0 - cut) / T
    # gain is 0 at padding, and the scale is 0 off the active queries
    gain = np.where(mask, np.expm1(y * np.log(2.0)), 0.0)
    scale = np.divide(weights, ideal, out=np.zeros_like(ideal), where=active)[:, None]
    ndcg = (gain * discount * cut * scale).sum(axis=1)  # already weighted by 1/n_active
    value = float(weights.sum() - ndcg.sum())
    cotangent = -scale * gain * (d_discount * cut + discount * d_cut)  # d value / d above_i
    grad = smoothed_sums_vjp(s, mask, active, [_above_kernel], [ones], [cotangent], T, block_elements)
    return value, grad


def _smoothed_cascade(s, mask, stop, temperature, block_elements):
    """1 - sum_i stop_i / pi_i * prod_{j != i} (1 - stop_j sigma_ij), mean over queries with
    at least two documents and some stop_i > 0."""
    T = _check_temperature(temperature)
    active = (mask.sum(axis=1) >= 2) & (stop > 0).any(axis=1)
    weights = query_weights(active)[:, None]
    kernels, values = [_above_kernel, _survival_kernel], [np.ones(s.shape), stop]
    above, log_reached = smoothed_sums(s, mask, active, kernels, values, T, block_elements)
    term = np.where(active[:, None], stop * np.exp(log_reached) / (1.0 + above), 0.0)
    value = float(weights.sum() - (weights * term).sum())
    cotangents = [weights * term / (1.0 + above), -weights * term]  # d value / d above, d log_reached
    grad = smoothed_sums_vjp(s, mask, active, kernels, values, cotangents, T, block_elements)
    return value, grad


def smoothed_err(scores, labels, mask, *, temperature: float = 1.0, n_levels: int | None = None,
                 block_elements: int = PAIR_BLOCK_ELEMENTS):
    """1 - smoothed ERR with R = (2^r - 1) / 2^(|L| - 1), |L| = ``n_levels`` (None -> largest
    label + 1, the same R as :func:`rankstudy.evaluation.metrics.err` with its default max_label)."""
    s, y, mask = clean(scores, labels, mask)
    levels = label_levels(y, mask, n_levels)
    stop = np.where(mask, np.expm1(y * np.log(2.0)) / 2.0 ** (levels - 1), 0.0)
    return _smoothed_cascade(s, mask, stop, temperature, block_elements)


def smoothed_mrr(scores, labels, mask, *, temperature: float = 1.0, rel_threshold: float = 1.0,
                 block_elements: int = PAIR_BLOCK_ELEMENTS):
    """1 - smoothed reciprocal rank of the first document with label >= rel_threshold."""
    s, y, mask = clean(scores, labels, mask)
    stop = (mask & (y >= rel_threshold)).astype(np.float64)
    return _smoothed_cascade(s, mask, stop, temperature, block_elements)
