"""The approximate rank pi and the sigmoid it is made of, shared by ApproxNDCG
(:func:`rankstudy.losses.listwise.approx_ndcg`) and Tran et al.'s smoothed metrics
(:mod:`rankstudy.losses.smoothed`).

With x_ij = (s_j - s_i) / temperature over a query's real documents j != i,
pi_i = 1 + sum_j sigmoid(x_ij): the rank of i with each indicator [s_j > s_i] smoothed.
:func:`pair_sums` evaluates any such kernel sum (the smoothed cascades of ERR and MRR use a
second kernel in the same sweep) and :func:`pair_sums_vjp` its gradient, in bounded blocks
(:func:`rankstudy.losses.padded.pair_blocks`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from rankstudy.losses.padded import PAIR_BLOCK_ELEMENTS, pair_blocks

# kernel(x, v_j) -> (k, dk/dx) with x = (f_j - f_i) / temperature and v_j a value of document j
Kernel = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def sigmoid_pair(x):
    """sigmoid(x) and sigmoid(-x) from one exp(-|x|): no overflow, no cancellation."""
    e = np.exp(-np.abs(x))
    big, small = 1.0 / (1.0 + e), e / (1.0 + e)
    return np.where(x >= 0, big, small), np.where(x >= 0, small, big)


def above_kernel(x, _):
    """Smoothed delta[f_j > f_i]: summed over j it is pi_i - 1."""
    up, down = sigmoid_pair(x)
    return up, up * down


def _block_x(s, mask, block, temperature):
    """x_ij = (s_j - s_i) / temperature over the block, and which (i, j) are real, i != j."""
    q, rows, w = block
    sc = s[q, :w]
    x = (sc[:, None, :] - sc[:, rows, None]) / temperature
    real = mask[q, rows][:, :, None] & mask[q, :w][:, None, :]
    valid = real & (np.arange(w)[rows][:, None] != np.arange(w)[None, :])
    return x, valid


def pair_sums(s, mask, active, kernels: list[Kernel], values: list[np.ndarray], temperature: float,
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


def pair_sums_vjp(s, mask, active, kernels: list[Kernel], values: list[np.ndarray],
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


def approx_ranks(s, mask, active, temperature: float, block_elements: int = PAIR_BLOCK_ELEMENTS) -> np.ndarray:
    """pi (Q, L) of the active queries' documents (1 elsewhere, padding included)."""
    (above,) = pair_sums(s, mask, active, [above_kernel], [np.ones(s.shape)], temperature, block_elements)
    return 1.0 + above


def approx_ranks_vjp(s, mask, active, cotangent: np.ndarray, temperature: float,
                     block_elements: int = PAIR_BLOCK_ELEMENTS) -> np.ndarray:
    """Gradient of sum_{q, i} cotangent[q, i] * pi[q, i] with respect to s."""
    return pair_sums_vjp(s, mask, active, [above_kernel], [np.ones(s.shape)], [cotangent], temperature,
                         block_elements)
