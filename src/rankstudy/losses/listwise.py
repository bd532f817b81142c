"""Listwise losses of the last decade, after Rax and allRank (conventions in :mod:`rankstudy.losses`):

``softmax`` (Rax ``softmax_loss``)
    -sum_i t_i log softmax(s)_i with t = gain / sum(gain) over the query's real documents.
``poly1`` (Leng et al. 2022, Rax ``poly1_softmax_loss``)
    softmax + epsilon (1 - p_t), p_t = sum_i t_i softmax(s)_i.
``approx_ndcg`` (Qin et al. 2010, Rax ``approx_t12n(ndcg_metric)``, allRank ``approxNDCGLoss``)
    1 - DCG / ideal DCG@k with each rank replaced by pi_i = 1 + sum_{j != i} sigmoid((s_j - s_i) / T).
    k=None (the whole list) is Tran et al.'s ``smoothed_ndcg`` without cut: both take pi from
    :mod:`rankstudy.losses.approx_rank`. With k, as in Rax,
    the cut is sigmoid((m - pi_i) / T), m the mean of the k-th and (k+1)-th smallest pi
    (queries of at most k documents are not cut).
``neural_ndcg`` (Pobrotyn and Bialobrzeski 2021, allRank ``neuralNDCG`` / ``neuralNDCG_transposed``)
    1 - NeuralNDCG@k: NeuralSort's relaxed permutation matrix, Sinkhorn-scaled, contracted with
    the gains and the discounts 1/log2(2 + r) of ranks r < k; JAX autodiff
    (:mod:`rankstudy.losses.neural_jax`, imported only when the loss is called).

``gain``: ``"label"`` (the label itself) or ``"exp"`` (2^label - 1); the defaults are Rax's
(``softmax``/``poly1`` take the labels as they are, NDCG uses 2^label - 1). Negative gains are
refused. The ideal DCG@k is exact (gains sorted, discount 1/log2(1 + rank)); gains, discounts and
the ideal DCG are :mod:`rankstudy.evaluation.dcg`'s.

Which queries count (value = mean over them): at least two documents and a positive total gain
(softmax, poly1) or ideal DCG (the NDCG losses). Differences from the references: Rax averages
over every non-empty list, with a uniform target where all labels are 0; Rax's ``softmax_loss``
does not normalise the labels unless given ``label_fn=normalize_probabilities`` (its poly1's
cross entropy neither, its p_t does); Rax stops the gradient through the cut point m, we
differentiate it (L-BFGS needs the gradient of the value it sees); allRank's losses are -NDCG
averaged over all lists in the batch (approxNDCG) or those with ideal DCG > 0 (NeuralNDCG,
single-document lists included) and add 1e-10 to denominators.
"""

from __future__ import annotations

import numpy as np

from rankstudy.evaluation import dcg
from rankstudy.losses.approx_rank import approx_ranks, approx_ranks_vjp, sigmoid_pair
from rankstudy.losses.padded import (
    PAIR_BLOCK_ELEMENTS,
    clean,
    masked_log_softmax,
    query_chunks,
    query_weights,
)

GAINS = ("label", "exp")
# NeuralNDCG's (Qc, L, L) chunks: 2 MB a matrix; the 50 Sinkhorn steps keep one each for autodiff
NEURAL_BLOCK_ELEMENTS = 1 << 18


# --------------------------------------------------------------------------- shared parts

# our gain names and the evaluation's (rankstudy.evaluation.dcg)
_DCG_GAIN = {"label": "linear", "exp": "exp"}


def gains(y: np.ndarray, mask: np.ndarray, gain: str) -> np.ndarray:
    """Per-document gains (0 at padding) of cleaned labels, ``gain`` one of :data:`GAINS`; a
    negative gain is refused here, where the labels are seen."""
    g = np.where(mask, dcg.gain(y, _DCG_GAIN[gain]), 0.0)
    if np.any(g[mask] < 0):
        raise ValueError(f"gain={gain!r} needs labels >= 0, got a label of {y[mask].min():g}")
    return g


def _ideal_dcg(y: np.ndarray, mask: np.ndarray, k: int | None, gain: str) -> np.ndarray:
    """Ideal DCG@k of each row of cleaned labels, under our gain name."""
    return dcg.ideal_dcg(y, mask, None if k is None else int(k), _DCG_GAIN[gain])


def _softmax_target(scores, labels, mask, gain):
    s, y, mask = clean(scores, labels, mask)
    g = gains(y, mask, gain)
    total = g.sum(axis=1)
    weights = query_weights((mask.sum(axis=1) >= 2) & (total > 0))
    target = g / np.where(total > 0, total, 1.0)[:, None]
    log_p = masked_log_softmax(s, mask)
    return target, log_p, np.where(mask, np.exp(log_p), 0.0), weights


# --------------------------------------------------------------------------- losses

def softmax(scores, labels, mask, *, gain="label"):
    """Softmax cross entropy against the gains normalised to a distribution (module docstring).
    Per query: -sum_i t_i log p_i; gradient p - t."""
    target, log_p, p, weights = _softmax_target(scores, labels, mask, gain)
    value = float(-(target * log_p).sum(axis=1) @ weights)
    return value, (p - target) * weights[:, None]


def poly1(scores, labels, mask, *, epsilon=1.0, gain="label"):
    """Poly-1 softmax: the softmax loss + epsilon (1 - p_t), p_t = sum_i t_i p_i.
    d p_t / d s_j = p_j (t_j - p_t)."""
    target, log_p, p, weights = _softmax_target(scores, labels, mask, gain)
    pt = (target * p).sum(axis=1)
    per_query = -(target * log_p).sum(axis=1) + epsilon * (1.0 - pt)
    grad = p - target - epsilon * p * (target - pt[:, None])
    return float(per_query @ weights), grad * weights[:, None]


def approx_ndcg(scores, labels, mask, *, temperature=1.0, k=None, gain="exp",
                block_elements=PAIR_BLOCK_ELEMENTS):
    """ApproxNDCG (module docstring): per query 1 - sum_i g_i cut_i / log2(1 + pi_i) / IDCG@k.
    Two sweeps over bounded pair blocks (:mod:`rankstudy.losses.approx_rank`): the approximate
    ranks, then their adjoints back to the scores."""
    s, y, mask = clean(scores, labels, mask)
    g = gains(y, mask, gain)
    n_docs = mask.sum(axis=1)
    idcg = _ideal_dcg(y, mask, k, gain)
    active = (n_docs >= 2) & (idcg > 0)
    weights = query_weights(active)
    grad = np.zeros(s.shape)
    if not active.any():
        return 0.0, grad
    pi = approx_ranks(s, mask, active, temperature, block_elements)
    discount = dcg.discount(pi)
    scale = np.where(active, 1.0 / np.where(idcg > 0, idcg, 1.0), 0.0)[:, None]  # 1/IDCG
    cut = np.ones(s.shape)
    cut_pos = None
    if k is not None:
        # m between the k-th and (k+1)-th smallest pi of each query longer than k (Rax's cut point)
        order = np.argsort(np.where(mask, pi, np.inf), axis=1, kind="stable")
        cut_pos = order[:, [k - 1, k]] if s.shape[1] > k else None
        if cut_pos is not None:
            long = active & (n_docs > k)
            m = np.take_along_axis(pi, cut_pos, axis=1).mean(axis=1)
            cut = np.where(long[:, None], sigmoid_pair((m[:, None] - pi) / temperature)[0], 1.0)
    contribution = g * cut * discount * scale  # each document's share of NDCG
    value = float((1.0 - contribution.sum(axis=1)) @ weights)
    # adjoint of pi (d loss / d pi): through the discount and through the cut
    cut_slope = np.where(mask, g * discount * scale * cut * (1.0 - cut) / temperature, 0.0)
    adjoint = np.where(mask, -g * cut * scale * dcg.discount_slope(pi, discount), 0.0) + cut_slope
    if cut_pos is not None:
        # d loss / d m = -sum_i cut_slope_i, shared equally by the two pi that make m
        np.add.at(adjoint, (np.arange(s.shape[0])[:, None], cut_pos), -0.5 * cut_slope.sum(axis=1, keepdims=True))
    adjoint *= weights[:, None]
    return value, approx_ranks_vjp(s, mask, active, adjoint, temperature, block_elements)


def neural_ndcg(scores, labels, mask, *, temperature=1.0, k=None, transposed=False, sinkhorn_iterations=50,
                gain="exp", block_elements=NEURAL_BLOCK_ELEMENTS):
    """NeuralNDCG (module docstring), per query 1 - NeuralNDCG@k. For each query, NeuralSort's
    P[r, i] = softmax_i(((n + 1 - 2 (r + 1)) s_i - sum_j |s_i - s_j|) / temperature) over its n real
    documents, then ``sinkhorn_iterations`` column-then-row normalisations (allRank's order; a
    fixed count, no tolerance, so the value is smooth in the scores), then
    DCG = sum_{r < k} d_r sum_i P[r, i] g_i (expected gain per rank) or, ``transposed``,
    sum_i g_i sum_{r < k} P[r, i] d_r (expected discount per document). Both contract the same
    matrix, so as in allRank's code they give the same value to rounding; the variants of the
    paper differ only where P is not doubly stochastic. The gradient is JAX's (float64);
    queries go in chunks of at most ``block_elements`` matrix entries."""
    s, y, mask = clean(scores, labels, mask)
    g = gains(y, mask, gain)
    idcg = _ideal_dcg(y, mask, k, gain)
    active = (mask.sum(axis=1) >= 2) & (idcg > 0)
    weights = query_weights(active)
    grad = np.zeros(s.shape)
    if not active.any():
        return 0.0, grad
    from rankstudy.losses.neural_jax import neural_dcg_chunk  # JAX only for jobs that use this loss

    value = 0.0
    for q, w in query_chunks(mask, np.flatnonzero(active), block_elements, lambda widths: widths ** 2):
        # weight 1/IDCG per query: the chunk's sum of weighted NDCGs and its gradient
        coef = weights[q] / idcg[q]
        dcg_sum, dcg_grad = neural_dcg_chunk(s[q, :w], g[q, :w], mask[q, :w], coef, float(temperature),
                                             None if k is None else int(k), bool(transposed),
                                             int(sinkhorn_iterations))
        value += weights[q].sum() - dcg_sum
        grad[q, :w] = -dcg_grad
    return float(value), grad
