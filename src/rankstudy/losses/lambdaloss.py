"""The LambdaLoss framework (Wang et al., CIKM 2018), as allRank's ``lambdaLoss`` (conventions in
:mod:`rankstudy.losses`).

Per query: sum over pairs y_i > y_j of w_ij log2(1 + exp(-sigma (s_i - s_j))), i.e. allRank's
-log2(sigmoid(sigma d)^w_ij), where the weights come from the current ranking (positions p by
descending score, ties by column) and the gains G = (2^y - 1) / ideal DCG@k:

* ``lambdarank``: |1/log2(1 + p_i) - 1/log2(1 + p_j)| |G_i - G_j| (LambdaRank's Delta NDCG);
* ``ndcgloss2``: |1/log2(1 + |p_i - p_j|) - 1/log2(2 + |p_i - p_j|)| |G_i - G_j| (NDCG-Loss2);
* ``ndcgloss2pp``: mu ndcgloss2 + lambdarank (NDCG-Loss2++).

``k``: only pairs with both positions <= k count (allRank's NDCG@k mask). The weights are held
fixed in the gradient, as in the paper's EM view: between rank swaps they are constant, so the
gradient is the loss's own; where two documents of different gains swap ranks the value jumps.

A query counts (value = mean over them) when it has two different labels. Unlike allRank we take
the mean over queries instead of the batch sum and do not clamp sigmoid at 1e-10 (the loss keeps
growing linearly for very wrong pairs). Pairs are evaluated in bounded blocks
(:func:`rankstudy.losses.padded.pair_term_sum`).
"""

from __future__ import annotations

import numpy as np

from rankstudy.evaluation import dcg
from rankstudy.losses.baseline import ranknet_pair
from rankstudy.losses.padded import PAIR_BLOCK_ELEMENTS, PairBlock, clean, pair_term_sum, true_positions

WEIGHTINGS = ("ndcgloss2", "ndcgloss2pp", "lambdarank")


def lambdaloss(scores, labels, mask, *, weighting="ndcgloss2pp", k=None, sigma=1.0, mu=10.0,
               block_elements=PAIR_BLOCK_ELEMENTS):
    """LambdaLoss with allRank's weighting schemes (module docstring)."""
    s, y, mask = clean(scores, labels, mask)
    y_real = np.where(mask, y, np.nan)  # NaN compares False: padding is in no pair
    active = np.where(mask, y, -np.inf).max(axis=1) > np.where(mask, y, np.inf).min(axis=1)
    position = true_positions(np.argsort(np.where(mask, -s, np.inf), axis=1, kind="stable"))
    idcg = dcg.ideal_dcg(y, mask, k)
    gain = np.where(mask, dcg.gain(y), 0.0) / np.where(idcg > 0, idcg, 1.0)[:, None]

    def block_terms(block: PairBlock, d: np.ndarray):
        q, rows, w = block
        is_pair = y_real[q, rows][:, :, None] > y_real[q, :w][:, None, :]
        p_i = np.broadcast_to(position[q, rows][:, :, None], d.shape)
        p_j = np.broadcast_to(position[q, :w][:, None, :], d.shape)
        if k is not None:
            is_pair &= (p_i <= k) & (p_j <= k)
        p_i, p_j = p_i[is_pair], p_j[is_pair]
        gain_gap = np.abs(gain[q, rows][:, :, None] - gain[q, :w][:, None, :])[is_pair]
        weight = np.zeros(p_i.shape)
        if weighting != "ndcgloss2":  # lambdarank, ndcgloss2pp
            weight += np.abs(dcg.discount(p_i) - dcg.discount(p_j))
        if weighting != "lambdarank":  # ndcgloss2, ndcgloss2pp
            apart = np.abs(p_i - p_j)  # >= 1: positions are distinct
            weight += (1.0 if weighting == "ndcgloss2" else mu) * (dcg.discount(apart) - dcg.discount(apart + 1.0))
        weight *= gain_gap / np.log(2.0)  # the term is log2(1 + exp(.)): softplus / ln 2
        # RankNet's term at sigma d: softplus(-sigma d) and -sigmoid(-sigma d), without overflow
        softplus, minus_sigmoid = ranknet_pair(sigma * d[is_pair])
        return is_pair, weight * softplus, sigma * weight * minus_sigmoid

    return pair_term_sum(s, mask, active, block_terms, block_elements)
