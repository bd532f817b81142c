"""Tran et al. (2011) pairwise losses: weighted l4 (Eq. 9) and WUB (Eqs. 17-18).

Same convention as every loss (:mod:`rankstudy.losses`): ``loss(scores, labels, mask, **options) ->
(value, grad)`` on padded ``(Q, L)`` arrays; padding never affects the value and gets zero
gradient; value = mean over the queries that have at least one pair term.

``pairwise_loss`` (l4, Eq. 9)
    per query ``sum_{r_i > r_j} V_ij * phi(f_i - f_j)``: one term per pair with DIFFERENT
    labels, oriented so that i is the preferred document (Table 3 defines phi "for o_i > o_j";
    tied pairs express no preference and have no term). ``phi`` is one of :data:`PHIS`,
    ``weight`` one of :data:`PAIR_WEIGHTS`. phi="logistic", weight="unit" is RankNet.

``wub`` (l8, Eq. 18, the Weighted pairwise Upper Bound of the MRF log-loss, Eq. 17)
    per query ``-sum_{i<j} W_ij log Q(r_i, r_j)`` over ALL pairs of the query, ties included
    (Eq. 17 sums over every pair of the MRF). With d = f_i - f_j,
    ``psi(r_i, r_j) = exp(gamma * sign(r_i - r_j) * d)`` (Eq. 14) and Q = psi / Z_ij where
    ``Z_ij = sum_{a, b in L} psi(a, b) = |L| + m (e^{gamma d} + e^{-gamma d})``,
    ``m = |L| (|L| - 1) / 2`` (of the |L|^2 label states of a pair, |L| are ties, m have
    a > b and m have a < b). So ``-log Q = -gamma sign(r_i - r_j) d + log Z_ij``: a strict
    pair is pushed apart in the right direction, a tied pair is pulled together. With unit
    weights, value + (N_q - 2) log|L| upper-bounds the exact MRF loss -log P(r) (appendix),
    with equality for N_q = 2; the constant C is left out (no gradient). Per Table 9's note,
    WUB weights must not include the ratings (the likelihood already does), so ``wub`` only
    accepts the rating-free :data:`WUB_WEIGHTS`.

Weights (Table 9, and Table 5 for ``exp_label_diff_n``), for a pair with r_i > r_j::

    unit              1
    inv_n             1 / N_q
    label_diff        |r_i - r_j|
    label_diff_n      |r_i - r_j| / N_q
    ndcg_swap         |(R_i - R_j)(eta_i - eta_j)| / NDCG_max
    gain_pos          |(R_i - R_j)(eta_i - eta_j)|
    gain_diff         |R_i - R_j|
    gain_diff_n       |R_i - R_j| / N_q
    exp_label_diff_n  |2^(r_i - 1) - 2^(r_j - 1)| / N_q

with ``R_i = (2^r_i - 1) / 2^(|L| - 1)`` (|L| = ``n_levels``; None -> largest label in the
batch + 1, so R of the top grade of a 0..4 scale is 15/16 as in Table 1's ERR),
``eta_i = 1 / log2(1 + pi_i)``, pi_i the 1-based position of document i when the query is
sorted by label, descending, label ties broken by :func:`rankstudy.losses.padded.plackett_luce_order`
(``seed``), and ``NDCG_max = sum_i (2^r_i - 1) eta_i``, the whole-list ideal DCG with the
gain and log2 discount of :func:`rankstudy.evaluation.metrics.ndcg`. The paper writes "log" for eta;
log2 is used so eta is exactly NDCG_max's discount (another base only rescales all eta).

Why |.|: Eq. 9 sums over pairs j > i in LIST order and requires V_ij >= 0, so a weight is a
property of the unordered pair. For a pair oriented by preference (r_i > r_j) the label sort
puts i above j, so every product/difference above is already >= 0 and |.| changes nothing;
|.| makes the weight symmetric, hence also correct for a pair written the other way round
and for WUB's tied pairs, whose eta difference has the sign of an arbitrary tie-break.

Pairs are built in bounded blocks (see :func:`rankstudy.losses.padded.pair_blocks`), so a 1,000-document query
never holds an L x L array at once.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from rankstudy.evaluation import dcg
from rankstudy.losses.baseline import ranknet_pair
from rankstudy.losses.padded import (
    PAIR_BLOCK_ELEMENTS,
    PairBlock,
    clean,
    label_levels,
    pair_term_sum,
    plackett_luce_order,
    true_positions,
)

# --------------------------------------------------------------------------- phi (Table 3)

def _quadratic(d):
    return (1.0 - d) ** 2, -2.0 * (1.0 - d)


def _hinge(d):
    # not differentiable at d = 1: the subgradient used there is 0 (the right derivative)
    return np.maximum(0.0, 1.0 - d), np.where(d < 1.0, -1.0, 0.0)


def _exponential(d):
    e = np.exp(-d)
    return e, -e


PHIS: dict[str, Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]] = {
    "quadratic": _quadratic,      # (1 - d)^2
    "hinge": _hinge,              # max(0, 1 - d), subgradient 0 at the kink d = 1
    "exponential": _exponential,  # exp(-d)
    "logistic": ranknet_pair,    # log(1 + exp(-d)), the stable RankNet term
}


# --------------------------------------------------------------------------- weights V_ij

class DocTerms(NamedTuple):
    """Per-document quantities the weights use, shaped to broadcast over a pair block."""

    label: np.ndarray
    gain: np.ndarray | None  # R = (2^r - 1) / 2^(|L| - 1)
    discount: np.ndarray | None  # eta = 1 / log2(1 + true position)


class QueryTerms(NamedTuple):
    n_docs: np.ndarray  # N_q
    ideal_dcg: np.ndarray | None  # NDCG_max = sum_i (2^r_i - 1) eta_i


class PairWeight(NamedTuple):
    fn: Callable[[DocTerms, DocTerms, QueryTerms], np.ndarray | float]
    uses_ratings: bool  # WUB must not use these (Table 9 note)
    uses_gain: bool  # needs R, hence n_levels
    uses_positions: bool  # needs the true positions (a sort), so only computed when used


def _gain_pos(i: DocTerms, j: DocTerms) -> np.ndarray:
    return np.abs((i.gain - j.gain) * (i.discount - j.discount))


PAIR_WEIGHTS: dict[str, PairWeight] = {
    "unit": PairWeight(lambda i, j, q: 1.0, False, False, False),
    "inv_n": PairWeight(lambda i, j, q: 1.0 / q.n_docs, False, False, False),
    "label_diff": PairWeight(lambda i, j, q: np.abs(i.label - j.label), True, False, False),
    "label_diff_n": PairWeight(lambda i, j, q: np.abs(i.label - j.label) / q.n_docs, True, False, False),
    "ndcg_swap": PairWeight(lambda i, j, q: _gain_pos(i, j) / q.ideal_dcg, True, True, True),
    "gain_pos": PairWeight(lambda i, j, q: _gain_pos(i, j), True, True, True),
    "gain_diff": PairWeight(lambda i, j, q: np.abs(i.gain - j.gain), True, True, False),
    "gain_diff_n": PairWeight(lambda i, j, q: np.abs(i.gain - j.gain) / q.n_docs, True, True, False),
    "exp_label_diff_n": PairWeight(
        lambda i, j, q: np.abs(np.exp2(i.label - 1.0) - np.exp2(j.label - 1.0)) / q.n_docs, True, False, False),
}

# Rating-free weights for WUB: Table 9's schemes with the rating factors dropped
# (|r_i - r_j| -> 1, (R_i - R_j)(eta_i - eta_j) -> |eta_i - eta_j|, ...).
WUB_WEIGHTS: dict[str, PairWeight] = {
    "unit": PAIR_WEIGHTS["unit"],
    "inv_n": PAIR_WEIGHTS["inv_n"],
    "pos_diff": PairWeight(lambda i, j, q: np.abs(i.discount - j.discount), False, False, True),
}


def true_discounts(y: np.ndarray, mask: np.ndarray, seed: int = 0) -> np.ndarray:
    """eta = 1 / log2(1 + pi) with pi the 1-based position in the label-sorted query
    (seeded tie-break); 0 at padding."""
    position = true_positions(plackett_luce_order(y, mask, seed))
    return np.where(mask, dcg.discount(position), 0.0)


def _doc_and_query_terms(y, mask, weight: PairWeight, n_levels, seed):
    gain = discount = ideal = None
    if weight.uses_gain:
        gain = np.where(mask, np.expm1(y * np.log(2.0)) / 2.0 ** (label_levels(y, mask, n_levels) - 1), 0.0)
    if weight.uses_positions:
        discount = true_discounts(y, mask, seed)
        ideal = dcg.ideal_dcg(y, mask)
    return DocTerms(y, gain, discount), QueryTerms(mask.sum(axis=1).astype(np.float64), ideal)


def _block_weights(weight: PairWeight, docs: DocTerms, query: QueryTerms, block: PairBlock, shape):
    """V_ij over a block, broadcast to ``shape`` (Qc, rows, width)."""
    q, rows, w = block
    side_i = DocTerms(*(None if a is None else a[q, rows][:, :, None] for a in docs))
    side_j = DocTerms(*(None if a is None else a[q, :w][:, None, :] for a in docs))
    per_query = QueryTerms(*(None if a is None else a[q][:, None, None] for a in query))
    return np.broadcast_to(weight.fn(side_i, side_j, per_query), shape)


# --------------------------------------------------------------------------- losses

def pairwise_loss(scores, labels, mask, *, phi: str = "logistic", weight: str = "unit",
                  n_levels: int | None = None, seed: int = 0,
                  block_elements: int = PAIR_BLOCK_ELEMENTS):
    """Tran et al.'s l4 (Eq. 9): sum over pairs r_i > r_j of V_ij * phi(f_i - f_j) per query;
    value = mean over queries with at least one such pair. See the module docstring for
    ``phi`` (:data:`PHIS`), ``weight`` (:data:`PAIR_WEIGHTS`), ``n_levels`` and ``seed``."""
    phi_fn, pair_weight = PHIS[phi], PAIR_WEIGHTS[weight]
    s, y, mask = clean(scores, labels, mask)
    docs, query = _doc_and_query_terms(y, mask, pair_weight, n_levels, seed)
    y_real = np.where(mask, y, np.nan)  # NaN compares False: padding is in no pair
    active = np.where(mask, y, -np.inf).max(axis=1) > np.where(mask, y, np.inf).min(axis=1)

    def block_terms(block, d):
        q, rows, w = block
        is_pair = y_real[q, rows][:, :, None] > y_real[q, :w][:, None, :]
        v = _block_weights(pair_weight, docs, query, block, d.shape)[is_pair]
        value, slope = phi_fn(d[is_pair])
        return is_pair, v * value, v * slope

    return pair_term_sum(s, mask, active, block_terms, block_elements)


def _log_pair_partition(x: np.ndarray, n_levels: int):
    """log Z_ij = log(|L| + m (e^x + e^-x)), m = |L|(|L|-1)/2, and its x-derivative,
    written with e^{-|x|} only so that it never overflows."""
    m = n_levels * (n_levels - 1) / 2.0
    if m == 0:  # one label state: Z_ij = 1
        return np.zeros_like(x), np.zeros_like(x)
    a = np.abs(x)
    e1, e2 = np.exp(-a), np.exp(-2.0 * a)
    rest = m * (1.0 + e2) + n_levels * e1  # = Z_ij e^{-|x|}
    return a + np.log(rest), np.sign(x) * m * (1.0 - e2) / rest


def wub(scores, labels, mask, *, weight: str = "unit", gamma: float | str = 1.0,
        n_levels: int | None = None, seed: int = 0, block_elements: int = PAIR_BLOCK_ELEMENTS):
    """WUB (Eqs. 17-18): per query -sum_{i<j} W_ij log Q(r_i, r_j) over all pairs, ties
    included; value = mean over queries with at least two documents (see the module
    docstring for Q). ``weight`` is one of the rating-free :data:`WUB_WEIGHTS`.
    ``gamma`` is the MRF's scale: a positive float, or ``"inv_pairs"`` for the paper's
    example 2 / (N_q (N_q - 1)) per query. |L| = ``n_levels`` (None -> largest label + 1)."""
    pair_weight = WUB_WEIGHTS[weight]
    s, y, mask = clean(scores, labels, mask)
    levels = label_levels(y, mask, n_levels)
    n_docs = mask.sum(axis=1)
    if isinstance(gamma, str):  # "inv_pairs", the one name its declaration allows
        gamma_q = 2.0 / np.maximum(n_docs * (n_docs - 1), 1)
    else:
        gamma_q = np.full(len(n_docs), float(gamma))
    docs, query = _doc_and_query_terms(y, mask, pair_weight, levels, seed)
    y_real = np.where(mask, y, np.nan)
    active = n_docs >= 2

    def block_terms(block, d):
        q, rows, w = block
        y_i, y_j = y_real[q, rows][:, :, None], y_real[q, :w][:, None, :]
        strict = y_i > y_j
        # each tied pair once (i < j); a strict pair is taken in its preferred orientation
        tied = (y_i == y_j) & (np.arange(w)[rows][:, None] < np.arange(w)[None, :])
        is_pair = strict | tied
        sign = strict[is_pair].astype(np.float64)
        g = np.broadcast_to(gamma_q[q][:, None, None], d.shape)[is_pair]
        x = g * d[is_pair]
        log_z, dlog_z = _log_pair_partition(x, levels)
        v = _block_weights(pair_weight, docs, query, block, d.shape)[is_pair]
        return is_pair, v * (log_z - sign * x), v * g * (dlog_z - sign)

    return pair_term_sum(s, mask, active, block_terms, block_elements)
