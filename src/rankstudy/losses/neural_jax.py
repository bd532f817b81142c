"""NeuralNDCG's DCG in JAX (the loss is :func:`rankstudy.losses.listwise.neural_ndcg`): NeuralSort's
relaxed permutation matrix and Sinkhorn scaling are differentiated by autodiff, in float64.

Imported only when the loss runs: JAX costs about a second to import (and is imported through
:mod:`rankstudy.util.jax_runtime`, which also scopes float64 and gives the shape buckets). Chunks
are padded to a width of 16, 24, 32, 48, 64, ... and a number of queries of 1, 2, 3, 4, 6, 8, ...
(:func:`~rankstudy.util.jax_runtime.bucket`), so a handful of compiled shapes serve every chunk
and every evaluation of an optimiser (padding is inert; compiling one shape takes a second or two).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from rankstudy.evaluation.dcg import discounts
from rankstudy.util.jax_runtime import bucket, float64, load_jax

jax = load_jax()  # a JAX_PLATFORMS this machine cannot honour is one line naming it
jnp = jax.numpy

# allRank's clamp of Sinkhorn's row and column sums: only empty (padding) rows and columns reach it
SINKHORN_EPS = 1e-10


def neural_sort(s, real, temperature):
    """P[b, r, i]: NeuralSort's row-stochastic relaxation of the descending sort of each row's real
    scores (rank slots r < n, documents i real; 0 elsewhere)."""
    width = s.shape[1]
    n = real.sum(axis=1)
    pair = real[:, :, None] & real[:, None, :]
    spread = jnp.where(pair, jnp.abs(s[:, :, None] - s[:, None, :]), 0.0).sum(axis=2)  # sum_j |s_i - s_j|
    slot = jnp.arange(width)
    slot_real = slot[None, :] < n[:, None]
    factor = (n[:, None] - 1 - 2 * slot[None, :]).astype(s.dtype)  # n + 1 - 2 (r + 1)
    logits = (factor[:, :, None] * s[:, None, :] - spread[:, None, :]) / temperature
    logits = jnp.where(real[:, None, :], logits, -jnp.inf)
    logits = jnp.where(slot_real[:, :, None], logits, 0.0)  # padding slots: harmless finite rows
    p = jax.nn.softmax(logits, axis=2)
    return jnp.where(slot_real[:, :, None] & real[:, None, :], p, 0.0), slot_real


def sinkhorn(p, slot_real, real, iterations):
    """``iterations`` rounds of column then row normalisation of the real block, as scalings:
    the scaled matrix is diag(u) P diag(v), and a round only updates the vectors (two batched
    matrix-vector products), so autodiff stores 2 vectors a round instead of a matrix: about 6x
    faster than scaling the matrix itself at 16 queries of 48 or 128 documents, the same values
    to 1e-15 (benchmarks/bench_sinkhorn.py). As allRank, the padding block (padding slots x
    padding documents) holds ones while scaling, so no row or column sum is zero; every real
    document is the largest entry of its own rank's row of P (NeuralSort), so a real column's
    sum is at least about 1/n, and the clamp at ``SINKHORN_EPS`` (allRank's) is never reached
    by a real row or column."""
    padding = ~slot_real[:, :, None] & ~real[:, None, :]
    p = jnp.where(padding, 1.0, p)

    def step(scales, _):
        u, v = scales
        v = v / jnp.maximum(v * jnp.einsum("bri,br->bi", p, u), SINKHORN_EPS)  # column sums
        u = u / jnp.maximum(u * jnp.einsum("bri,bi->br", p, v), SINKHORN_EPS)  # row sums
        return (u, v), None

    ones = jnp.ones(p.shape[:2], dtype=p.dtype)
    u, v = jax.lax.scan(step, (ones, ones), None, length=iterations)[0] if iterations else (ones, ones)
    return jnp.where(padding, 0.0, u[:, :, None] * p * v[:, None, :])


def weighted_dcg(s, g, real, coef, temperature, k, transposed, iterations):
    """sum over rows of coef * the relaxed DCG@k."""
    p, slot_real = neural_sort(s, real, temperature)
    p = sinkhorn(p, slot_real, real, iterations)
    discount = discounts(s.shape[1], k=k, xp=jnp)  # the evaluation's formula, traced by JAX
    if transposed:
        dcg = (g * jnp.einsum("bri,r->bi", p, discount)).sum(axis=1)  # expected discount per document
    else:
        dcg = (jnp.einsum("bri,bi->br", p, g) * discount).sum(axis=1)  # expected gain per rank
    return (coef * dcg).sum()


@partial(jax.jit, static_argnames=("temperature", "k", "transposed", "iterations"))
def _value_and_grad(s, g, real, coef, temperature, k, transposed, iterations):
    return jax.value_and_grad(weighted_dcg)(s, g, real, coef, temperature, k, transposed, iterations)


def neural_dcg_chunk(s: np.ndarray, g: np.ndarray, real: np.ndarray, coef: np.ndarray, temperature: float,
                     k: int | None, transposed: bool, iterations: int) -> tuple[float, np.ndarray]:
    """sum_b coef_b DCG_b and its gradient with respect to ``s`` (numpy in and out, float64)."""
    n_rows, width = s.shape
    rows, cols = bucket(n_rows, 1), bucket(width, 16)

    def padded(a, fill=0):
        out = np.full((rows, cols), fill, dtype=a.dtype)
        out[:n_rows, :width] = a
        return out

    coef_padded = np.zeros(rows)
    coef_padded[:n_rows] = coef
    with float64():
        value, grad = _value_and_grad(jnp.asarray(padded(s)), jnp.asarray(padded(g)), jnp.asarray(padded(real, False)),
                                      jnp.asarray(coef_padded), temperature, k, transposed, iterations)
        return float(value), np.asarray(grad, dtype=np.float64)[:n_rows, :width]
