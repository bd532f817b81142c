"""Element-wise losses of Tran, Phung & Venkatesh (2011), "Learning Rank Functionals".

The multiclass logistic loss l1 (Eq. 5) and instances of the weighted element-wise
decomposition l3 = sum_i W_i omega(r_i, o_i; r_-i, o_-i) (Eq. 8): weighted squared
error, weighted Plackett-Luce (WPL, Eq. 11), reverse Plackett-Luce (RPL, Eqs. 12-13)
and the weighted pseudo-likelihood of a fully connected MRF (WpLL, Eqs. 14-16),
with the weights W_i of Table 8 selected by name.

Same convention as every loss (:mod:`rankstudy.losses`): ``fn(scores, labels, mask, **options)
-> (value, grad)`` on padded ``(Q, L)`` arrays, padding never affects the value and
gets zero gradient, value = mean over the queries with at least one term (each
docstring says which those are), analytic gradient.

The "true position" pi_i of object i is its 1-based position in the training
permutation: labels descending, ties broken by the seeded hash of
:func:`rankstudy.losses.padded.plackett_luce_order` (the same permutation ListMLE uses).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from rankstudy.losses.padded import (
    PAIR_BLOCK_ELEMENTS,
    clean,
    label_levels,
    masked_log_softmax,
    plackett_luce_order,
    query_chunks,
    query_weights,
    true_positions,
)

# --------------------------------------------------------------------------- weights W_i (Table 8)

# Each weight is fn(labels, positions, n_levels) -> (Q, L): labels r_i (0 at padding),
# 1-based true positions pi_i, and |L| = number of label levels.
WeightFn = Callable[[np.ndarray, np.ndarray, int], np.ndarray]


def unit_weight(labels, positions, n_levels):
    return np.ones(labels.shape)


def label_weight(labels, positions, n_levels):
    return labels.copy()


def sqrt_label_weight(labels, positions, n_levels):
    return np.sqrt(labels)


def exp_label_weight(labels, positions, n_levels):
    # 2^(r-1) / 2^(|L|-1) exactly as printed in Table 8 (= 2^(r-|L|): the top grade
    # |L|-1 gets 1/2); only a constant factor away from any other normalisation
    return np.exp2(labels - n_levels)


def inverse_position_weight(labels, positions, n_levels):
    return 1.0 / positions


def inverse_log_position_weight(labels, positions, n_levels):
    # natural log, as printed (1/log(1 + pi)); log2 would only rescale by ln 2
    return 1.0 / np.log1p(positions)


ELEMENT_WEIGHTS: dict[str, WeightFn] = {
    "unit": unit_weight,
    "r": label_weight,
    "sqrt_r": sqrt_label_weight,
    "exp_r": exp_label_weight,
    "inv_pos": inverse_position_weight,
    "inv_log_pos": inverse_log_position_weight,
}

_LABEL_WEIGHTS_NEED_NONNEGATIVE = ("r", "sqrt_r")  # W_i >= 0 (Eq. 8)


def element_weights(name: str, labels, mask, order, n_levels: int | None = None) -> np.ndarray:
    """Weights W_i (Q, L) of Table 8 by name (a key of :data:`ELEMENT_WEIGHTS`: the losses'
    declarations check it, :mod:`rankstudy.losses.options`); 0 at padding.

    ``order`` is the training permutation (e.g. :func:`plackett_luce_order`), which
    defines the true positions pi_i; ``n_levels`` is |L| (None: max label + 1).
    """
    fn = ELEMENT_WEIGHTS[name]
    mask = np.asarray(mask, dtype=bool)
    labels = np.where(mask, np.asarray(labels, dtype=np.float64), 0.0)
    if name in _LABEL_WEIGHTS_NEED_NONNEGATIVE and np.any(labels < 0):
        raise ValueError(f"weight {name!r} needs non-negative labels")
    levels = label_levels(labels, mask, n_levels)
    weights = fn(labels, true_positions(np.asarray(order)), levels)
    return np.where(mask, weights, 0.0)


def _prepare(scores, labels, mask, weight, n_levels, seed):
    """Cleaned arrays, the training permutation and the weights, shared by the l3 losses."""
    s, y, mask = clean(scores, labels, mask)
    order = plackett_luce_order(y, mask, seed)
    return s, y, mask, order, element_weights(weight, y, mask, order, n_levels)


# --------------------------------------------------------------------------- l1: multiclass logistic

def multiclass_logistic(scores, labels, mask, *, n_levels=None, seed=0):
    """Multiclass logistic loss l1 (Eq. 5): -log P(best object first), with
    P(i first) = softmax(scores)_i over the query's real documents.

    Ties for the top label: per query, the AVERAGE of -log P(i first) over the
    documents i holding the query's top label, each against the whole list, i.e.
    logsumexp(s) - mean_{top} s_i (gradient softmax(s) - 1[top] / n_top).
    A query has a term when some document has a lower label than its top one: in a
    query where every document ties for best (incl. single documents) no object is
    the best, so it is ignored. Value = mean over such queries.
    ``n_levels`` and ``seed`` are accepted for a uniform call signature and unused.
    """
    s, y, mask = clean(scores, labels, mask)
    top = np.where(mask, y, -np.inf).max(axis=1, keepdims=True)
    is_top = mask & (y == top)
    active = (mask & (y < top)).any(axis=1)
    weights = query_weights(active)
    n_top = np.maximum(is_top.sum(axis=1, keepdims=True), 1)
    log_p = masked_log_softmax(s, mask)
    per_query = -(np.where(is_top, log_p, 0.0).sum(axis=1, keepdims=True) / n_top)[:, 0]
    value = float((per_query * weights).sum())
    grad = (np.where(mask, np.exp(log_p), 0.0) - is_top / n_top) * weights[:, None]
    return value, grad


# --------------------------------------------------------------------------- l3: weighted regression

def weighted_regression(scores, labels, mask, *, weight="unit", n_levels=None, seed=0):
    """Weighted squared error (Eq. 8 with omega = (r_i - f_i)^2): per query
    sum_i W_i (s_i - r_i)^2 (a SUM, as in Eq. 8, unlike ``pointwise_mse``'s mean).
    Value = mean over queries with at least one document."""
    s, y, mask, order, w = _prepare(scores, labels, mask, weight, n_levels, seed)
    weights = query_weights(mask.any(axis=1))
    residual = s - y  # zero at padding
    value = float(((w * residual ** 2).sum(axis=1) * weights).sum())
    return value, 2.0 * w * residual * weights[:, None]


# --------------------------------------------------------------------------- l3: Plackett-Luce family

def _weighted_pl_sums(x, real, w):
    """Weighted PL negative log-likelihood of columns already in choice order.

    x, real, w: (Q, L) log-worths, real-entry mask and weights (padding may sit
    anywhere: it enters as worth 0). Returns per-query
    sum_k w_k [logsumexp(x_k, x_{k+1}, ...) - x_k] and its gradient w.r.t. x (same order).
    Mirrors :func:`rankstudy.losses.baseline.listmle` operation for operation, so unit weights
    reproduce it bit for bit.
    """
    xm = np.where(real, x, -np.inf)
    # reverse cumulative logsumexp: stable even for suffixes far below the row maximum
    suffix_lse = np.logaddexp.accumulate(xm[:, ::-1], axis=1)[:, ::-1]
    suffix_lse = np.where(real, suffix_lse, 0.0)  # -inf at padding would make NaNs below
    per_query = np.where(real, (suffix_lse - x) * w, 0.0).sum(axis=1)
    # d/dx_j = sum_{k<=j} w_k exp(x_j - lse_k) - w_j, the prefix sum taken in log space;
    # log 0 = -inf for zero weights is absorbed by logaddexp
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    log_prefix = np.logaddexp.accumulate(np.where(real, log_w - suffix_lse, -np.inf), axis=1)
    grad = np.where(real, np.exp(np.where(real, x + log_prefix, 0.0)) - w, 0.0)
    return per_query, grad


def _pl_loss(s, mask, order, w, sign):
    """Weighted PL on worths exp(sign * s) choosing the columns in ``order``; mean over
    queries with at least two documents. Returns (value, grad w.r.t. s)."""
    weights = query_weights(mask.sum(axis=1) >= 2)
    x = sign * np.take_along_axis(s, order, axis=1)
    real = np.take_along_axis(mask, order, axis=1)
    per_query, grad_x = _weighted_pl_sums(x, real, np.take_along_axis(w, order, axis=1))
    grad = np.zeros_like(s)
    np.put_along_axis(grad, order, sign * grad_x * weights[:, None], axis=1)
    return float((per_query * weights).sum()), grad


def wpl(scores, labels, mask, *, weight="unit", n_levels=None, seed=0):
    """Weighted Plackett-Luce l5 (Eq. 11): with pi the training permutation (labels
    descending, seeded tie-break) and o_(k) the object at position k,
    sum_k W_(k) [-s_(k) + log sum_{j>=k} exp s_(j)]; the weight belongs to the object
    chosen at that step. Unit weights give exactly :func:`rankstudy.losses.baseline.listmle`.
    Value = mean over queries with at least two documents (the last step always has
    probability 1, so a single document has no term)."""
    s, y, mask, order, w = _prepare(scores, labels, mask, weight, n_levels, seed)
    return _pl_loss(s, mask, order, w, 1.0)


def rpl(scores, labels, mask, *, weight="unit", n_levels=None, seed=0):
    """Reverse Plackett-Luce l6 (Eqs. 12-13): objects are ELIMINATED worst first, each
    with probability proportional to exp(-s) among those not yet eliminated:
    sum_k W_(k) [s_(k) + log sum_{j<=k} exp(-s_(j))] over the training permutation
    (k = N first, as in Eq. 13), W attached to the eliminated object (as in WPL).
    Value = mean over queries with at least two documents."""
    s, y, mask, order, w = _prepare(scores, labels, mask, weight, n_levels, seed)
    # the reversed order puts padding first; its worth is 0 (log -inf), so it never counts
    return _pl_loss(s, mask, order[:, ::-1], w, -1.0)


# --------------------------------------------------------------------------- l3: MRF pseudo-likelihood

def _check_integer_labels(y: np.ndarray, mask: np.ndarray, n_levels: int) -> None:
    real = y[mask]
    if np.any(real != np.round(real)) or np.any(real < 0) or np.any(real >= n_levels):
        raise ValueError(f"wpll needs integer labels in 0..{n_levels - 1} (the label set L)")


def wpll(scores, labels, mask, *, weight="unit", n_levels=None, seed=0,
         block_elements=PAIR_BLOCK_ELEMENTS):
    """Weighted pseudo-likelihood l7 (Eqs. 14-16) of the fully connected MRF

        P(r) ∝ prod_{i<j} psi(r_i, r_j),  psi(r_i, r_j) = exp{gamma sign(r_i - r_j) (s_i - s_j)},

    with gamma = 2 / (N (N - 1)) per query (Eq. 14 prints the double sum inside psi;
    the product over pairs makes the pairwise form the only consistent reading).
    Per query: -sum_i W_i log P(r_i | r_-i), where over candidate labels c in
    L = {0, ..., |L|-1}

        P(c | r_-i) ∝ exp{gamma sum_{j != i} sign(c - r_j) (s_i - s_j)}
                    = exp{gamma (A(c) s_i - B(c))},
        A(c) = sum_j sign(c - r_j),   B(c) = sum_j sign(c - r_j) s_j

    (the j = i term is sign(.) * 0 = 0, so the sums may include i): O(N |L|) per query.
    Labels must be integers in 0..|L|-1 (|L| = ``n_levels`` or max label + 1).
    Value = mean over queries with at least two documents.
    """
    s, y, mask, order, w = _prepare(scores, labels, mask, weight, n_levels, seed)
    n_labels = label_levels(y, mask, n_levels)
    _check_integer_labels(y, mask, n_labels)
    n_docs = mask.sum(axis=1)
    active = n_docs >= 2
    per_query_weight = query_weights(active)
    gamma = np.where(active, 2.0 / np.maximum(n_docs * (n_docs - 1), 1), 0.0)
    candidates = np.arange(n_labels, dtype=np.float64)
    grad = np.zeros_like(s)
    total = 0.0
    for q, width in query_chunks(mask, np.flatnonzero(active), block_elements, lambda w: w * n_labels):
        sc, yc, mc, wc = s[q, :width], y[q, :width], mask[q, :width], w[q, :width]
        g = gamma[q][:, None, None]
        # sign(c - r_j) for each real j and candidate c: (Qc, width, |L|), 0 at padding
        sign = np.sign(candidates - yc[:, :, None]) * mc[:, :, None]
        A = sign.sum(axis=1)[:, None, :]
        B = (sign * sc[:, :, None]).sum(axis=1)[:, None, :]
        energy = g * (A * sc[:, :, None] - B)  # (Qc, width, |L|)
        top = energy.max(axis=2, keepdims=True)
        log_p = energy - top - np.log(np.exp(energy - top).sum(axis=2, keepdims=True))
        observed = candidates == yc[:, :, None]  # one-hot of r_i
        nll = -np.where(observed, log_p, 0.0).sum(axis=2)
        total += float(((wc * nll).sum(axis=1) * per_query_weight[q]).sum())
        # d/ds_k: own energy W_k gamma sum_c (p_k(c) - [c = r_k]) A(c), plus every
        # object's dependence on s_k: gamma sum_c D(c) sign(c - r_k) with
        # D(c) = sum_i W_i ([c = r_i] - p_i(c))
        residual = np.exp(log_p) - observed
        own = wc * (residual * A).sum(axis=2)
        D = -(wc[:, :, None] * residual).sum(axis=1)[:, None, :]
        cross = (D * sign).sum(axis=2)
        grad[q, :width] = g[:, :, 0] * (own + cross) * mc * per_query_weight[q][:, None]
    return total, grad
