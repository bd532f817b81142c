"""Loss-augmented inference for structural SVMs (Chakrabarti et al., KDD 2008, Section 3):
for one query with current scores s = Xw, the ranking y that maximises

    H(y) = Delta(y*, y) - w' (phi(x, y*) - phi(x, y)),

the most violated constraint of that query. Every routine returns ``(H, coef)`` for the best
y, where ``coef`` (one number per document) writes the feature-map difference on the
documents: w' (phi(x, y*) - phi(x, y)) = s . coef, so H = Delta - s . coef. Keeping the
feature map as per-document coefficients keeps the scorer a plain document scorer (any
scorer's vector-Jacobian product turns -coef into a parameter gradient), and lets the same
phi_po code serve the structural SVMs and the conditional models of Dubey et al.

Relevance is binary: z = 1 for a "good" document (label >= rel_threshold), else "bad";
n+ goods, n- bad. Ranks count from 0, as in the paper. Feature maps:

* phi_po (Eq. 3), (1/(n+ n-)) sum_{g,b} y_gb (x_g - x_b): the difference to y* is
  (2/(n+ n-)) sum over pairs with the bad document before the good one of (x_g - x_b);
* phi_mrr (Eq. 5), sum over bad documents before the top good g0(y) of (x_b - x_g0);
* phi_dorm (Eq. 6), sum_i A(rank_i) x_i with the decay A(r) = 1/sqrt(1 + r), optionally 0 from
  rank ``cut`` on; phi_dorm(y*) is its average over the orders that put the goods first.

Losses: Delta_AUC (Eq. 7), 1 - AP, 1 - NDCG@k with the paper's discount D(r) = 1 for r <= 1,
1/log2(1 + r) for 2 <= r < k and 0 from k on (binary gains), 1 - MRR@k.

A query without a good or without a bad document has no violated constraint: H = 0.

Latent forms (``anchor``, DORM and SVMmrr). With binary relevance the target is not unique:
every order with the goods first is ideal, and MRR asks for any one good on top. phi_po does
not see the order within a class, so SVMauc, SVMmap and SVMndcg are indifferent; phi_dorm and
phi_mrr are not. Their literal recipes fix the target without regard to w (DORM: one
goods-first y*, here the average over all of them; SVMmrr: any good may be the first, so the
constraints bind on the lowest-scored good), and on OHSUMED w = 0 is then the optimum at every
C. The latent form lets the scores choose among the equivalent targets: y* sorted by score
within each class (DORM), g0 = the highest-scored good (SVMmrr), i.e. for DORM

    H(s) = max_y [Delta(y*, y) + w' phi(x, y)] - max_{y* ideal} w' phi(x, y*),

a latent structural SVM (Yu and Joachims, ICML 2009). Passing ``anchor=s`` evaluates that
hinge: >= 0, >= Delta of the score-sorted ranking, piecewise linear but not convex in s.
With ``anchor`` fixed the hinge is convex in s and bounds the latent one from above, with
equality at s = anchor: the surrogate each CCCP round of the ranker minimises
(:mod:`rankstudy.rankers.structsvm`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.optimize import linear_sum_assignment

from rankstudy.evaluation import dcg
from rankstudy.evaluation.metrics import K

Inference = Callable[..., tuple[float, np.ndarray]]


class Sorted(NamedTuple):
    """A query's goods and bads, each sorted by decreasing score (ties: input order)."""

    good: np.ndarray  # positions of the good documents in the query
    bad: np.ndarray
    s_good: np.ndarray  # their scores, decreasing
    s_bad: np.ndarray
    prefix_bad: np.ndarray  # (n- + 1,) sums of the b highest bad scores, b = 0..n-

    @classmethod
    def of(cls, s: np.ndarray, z: np.ndarray) -> "Sorted":
        good, bad = np.flatnonzero(z), np.flatnonzero(~z)
        good = good[np.argsort(-s[good], kind="stable")]
        bad = bad[np.argsort(-s[bad], kind="stable")]
        return cls(good, bad, s[good], s[bad], np.concatenate([[0.0], np.cumsum(s[bad])]))

    def bads_above(self, scores: np.ndarray) -> np.ndarray:
        """For each score, the number of bad documents with a strictly higher score."""
        return np.searchsorted(-self.s_bad, -scores, side="left")


def paper_discount(n: int, k: int | None) -> np.ndarray:
    """D(r) for ranks r = 0..n-1: 1 for r <= 1, 1/log2(1 + r) below k, 0 from k on (Section 2.2.3):
    Jarvelin and Kekalainen's discount of the 1-based rank r + 1, cut at k."""
    return dcg.discounts(n, "jarvelin", None if k is None else int(k))


def _po_coefficients(n_docs: int, q: Sorted, bads_before: np.ndarray) -> np.ndarray:
    """phi_po difference of the total order that puts ``bads_before[i]`` bad documents (the
    highest-scored ones) before the i-th good document, as per-document coefficients."""
    scale = 2.0 / (len(q.good) * len(q.bad))
    coef = np.zeros(n_docs)
    coef[q.good] = scale * bads_before
    # bad j (sorted) precedes the goods i with bads_before[i] > j; bads_before is non-decreasing
    goods_after = len(q.good) - np.searchsorted(bads_before, np.arange(len(q.bad)), side="right")
    coef[q.bad] = -scale * goods_after
    return coef


def _monotone_dp(gain: Callable[[int, np.ndarray], np.ndarray], n_good: int, width: int) -> tuple[float, np.ndarray]:
    """max over non-decreasing b_0 <= ... <= b_{n+-1} in 0..width-1 of sum_i gain(i, b) (b as an
    array of all columns), and the maximiser: row by row, S_i(b) = gain(i, b) + max_{b' <= b} S_{i-1}(b')."""
    columns = np.arange(width)
    back = np.empty((n_good, width), dtype=np.int64)
    best = np.zeros(width)
    for i in range(n_good):
        running = np.maximum.accumulate(best)
        # the last column where the running max is attained is an argmax over [0, b]
        back[i] = np.maximum.accumulate(np.where(best == running, columns, 0))
        best = gain(i, columns) + running
    b = np.empty(n_good, dtype=np.int64)
    b[-1] = int(np.argmax(best))
    for i in range(n_good - 1, 0, -1):
        b[i - 1] = back[i, b[i]]
    return float(best[b[-1]]), b


# --------------------------------------------------------------------------- phi_po with Delta_AUC

def auc_po(s: np.ndarray, z: np.ndarray) -> tuple[float, np.ndarray]:
    """SVMauc: the pairs decide independently (Eq. 8); a pair is swapped when s_g - s_b < 1/2.
    Good i is swapped with the m_i highest-scored bads (m non-decreasing down the sorted
    goods), so the coefficients are those of the phi_po order with m_i bads before good i,
    counted once, from the goods' side. O(n log n) with sorted scores."""
    q = Sorted.of(s, z)
    swapped = q.bads_above(q.s_good - 0.5)  # s_b > s_g - 1/2
    coef = _po_coefficients(len(s), q, swapped)
    delta = swapped.sum() / (len(q.good) * len(q.bad))
    return float(delta - s @ coef), coef


# --------------------------------------------------------------------------- phi_po with Delta_MAP

def map_po(s: np.ndarray, z: np.ndarray) -> tuple[float, np.ndarray]:
    """SVMmap (Yue et al.): goods and bads stay in score order (Fact 3.2); the i-th good has
    b_i bads before it, b non-decreasing, chosen exactly by a dynamic programme over b in
    0..n- (O(n+ n-), after an O(n log n) sort). Delta = 1 - (1/n+) sum_i (i+1)/(i+b_i+1)."""
    q = Sorted.of(s, z)
    n_good, n_bad = len(q.good), len(q.bad)
    scale = 2.0 / (n_good * n_bad)

    def gain(i: int, b: np.ndarray) -> np.ndarray:
        return -(i + 1) / (n_good * (i + b + 1.0)) + scale * (q.prefix_bad[b] - b * q.s_good[i])

    value, b = _monotone_dp(gain, n_good, n_bad + 1)
    return 1.0 + value, _po_coefficients(len(s), q, b)


# --------------------------------------------------------------------------- phi_po with Delta_NDCG

def ndcg_po(s: np.ndarray, z: np.ndarray, k: int | None = K) -> tuple[float, np.ndarray]:
    """SVMndcg (Figure 2), and with ``k=None`` SVMndcg-nc (no clip).

    Goods and bads stay in score order; b_i bads precede the i-th good, so its rank is i + b_i
    and it earns D(i + b_i)/DCG*. With a clip k, b_i >= k earns nothing, and the phi_po part
    of a row is concave in b with its peak at the number of bads scored above the good: so
    the first row that takes b >= k takes max(k, that count), and so does every row after it
    (the region is absorbing). The table thus needs only the columns b < k plus that region
    (Fact 3.3's folded column, here exact also for the rows below it), and its rows are
    filled in O(k) each from the running maximum of the row above (Fact 3.4):
    O(n log n + n+ k) per query. Without a clip the columns run over 0..n-: O(n log n + n+ n-).
    """
    q = Sorted.of(s, z)
    n_good, n_bad = len(q.good), len(q.bad)
    scale = 2.0 / (n_good * n_bad)
    discount = paper_discount(n_good + n_bad, k)
    ideal = discount[:n_good].sum()

    def gain(i: int, b: np.ndarray) -> np.ndarray:
        return -discount[i + b] / ideal + scale * (q.prefix_bad[b] - b * q.s_good[i])

    if k is None or n_bad < k:  # every column is in the table
        value, b = _monotone_dp(gain, n_good, n_bad + 1)
        return 1.0 + value, _po_coefficients(len(s), q, b)
    # region b >= k: row i takes max(k, #bads above it); tail[i] = its value from row i to the end
    region_b = np.maximum(k, q.bads_above(q.s_good))
    region_gain = scale * (q.prefix_bad[region_b] - region_b * q.s_good)
    tail = np.concatenate([np.cumsum(region_gain[::-1])[::-1], [0.0]])
    # the table over b < k, row by row, remembering where the region could be entered
    columns = np.arange(k)
    back = np.empty((n_good, k), dtype=np.int64)
    best = np.zeros(k)
    enter_value, enter_row, enter_column = tail[0], 0, 0  # entering at row 0: no table rows before
    for i in range(n_good):
        running = np.maximum.accumulate(best)
        back[i] = np.maximum.accumulate(np.where(best == running, columns, 0))
        best = gain(i, columns) + running
        if best.max() + tail[i + 1] > enter_value:
            enter_value, enter_row, enter_column = best.max() + tail[i + 1], i + 1, int(np.argmax(best))
    b = np.empty(n_good, dtype=np.int64)
    b[enter_row:] = region_b[enter_row:]
    if enter_row > 0:  # rows before the region come from the table, backtracked from its last row
        b[enter_row - 1] = enter_column
        for i in range(enter_row - 1, 0, -1):
            b[i - 1] = back[i, b[i]]
    return 1.0 + enter_value, _po_coefficients(len(s), q, b)


# --------------------------------------------------------------------------- phi_po with Delta_MRR

def mrr_po(s: np.ndarray, z: np.ndarray, k: int = K) -> tuple[float, np.ndarray]:
    """phi_po with 1 - MRR@k, the pairing Figure 7 compares phi_mrr against. Goods and bads
    stay in score order (swapping two goods keeps the set of good positions, hence the first
    one's rank); only the first good's rank b_0 enters Delta: the same monotone programme as
    SVMmap with a loss in row 0 only. O(n+ n-)."""
    q = Sorted.of(s, z)
    n_good, n_bad = len(q.good), len(q.bad)
    scale = 2.0 / (n_good * n_bad)

    def gain(i: int, b: np.ndarray) -> np.ndarray:
        reciprocal = np.where(b < k, 1.0 / (1.0 + b), 0.0) if i == 0 else 0.0
        return -reciprocal + scale * (q.prefix_bad[b] - b * q.s_good[i])

    value, b = _monotone_dp(gain, n_good, n_bad + 1)
    return 1.0 + value, _po_coefficients(len(s), q, b)


# --------------------------------------------------------------------------- phi_mrr with Delta_MRR

def mrr_mrr(s: np.ndarray, z: np.ndarray, k: int = K, anchor: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """SVMmrr (Figure 3, Fact 3.5): the solutions cluster by the rank r of the first good
    document g0. For r < k the best puts the r highest-scored bads first, then g0:
    H = 1 - 1/(1 + r) + sum of those bads' scores - r s_g0. For r >= k (Delta = 1) the best
    puts every bad scored above g0, and at least k bads, first. O(n log n + k).

    Which good is g0: with ``anchor=None`` the paper's, the lowest-scored good (any good may
    come first in y, and the lowest-scored one violates most), so H asks every good, down to
    the worst, to be scored above the top bads. With ``anchor`` (one number per document) g0
    is the good the anchor scores highest (ties: the first): the latent form
    (module docstring), where only the good that leads the ranking has to beat the bads."""
    q = Sorted.of(s, z)
    n_bad = len(q.bad)
    if anchor is None:
        g0 = q.good[-1]
    else:
        goods = np.flatnonzero(z)
        g0 = goods[np.argmax(anchor[goods])]
    s_g0 = s[g0]
    r = np.arange(min(k - 1, n_bad) + 1)
    values = 1.0 - 1.0 / (1.0 + r) + q.prefix_bad[r] - r * s_g0
    best = int(np.argmax(values))
    value, before = float(values[best]), best
    if n_bad >= k:
        m = max(k, int(q.bads_above(np.array([s_g0]))[0]))
        clipped = 1.0 + q.prefix_bad[m] - m * s_g0
        if clipped > value:
            value, before = float(clipped), m
    coef = np.zeros(len(s))
    coef[g0] = before
    coef[q.bad[:before]] = -1.0
    return value, coef


# --------------------------------------------------------------------------- phi_dorm with Delta_NDCG

def dorm_decay(n: int, cut: int | None) -> np.ndarray:
    """A(r) = 1/sqrt(1 + r) for ranks r = 0..n-1, 0 from rank ``cut`` on if given."""
    a = 1.0 / np.sqrt(1.0 + np.arange(n))
    if cut is not None:
        a[int(cut):] = 0.0
    return a


def ndcg_dorm(s: np.ndarray, z: np.ndarray, k: int | None = K, cut: int | None = None,
              anchor: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """DORM (Section 3.5): the assignment of documents to ranks maximising
    sum_i s_i A(rank_i) - z_i D(rank_i)/DCG*, by scipy's linear_sum_assignment (O(n^3), or
    O(n R^2) when A and D vanish beyond rank R = max(cut, k)).

    y* is any order with the goods first. With ``anchor=None``, phi_dorm(y*) is the average
    over all of them (each good gets the mean of A over ranks 0..n+-1, each bad over
    n+..n-1): H is convex in s and >= 0 (by the rearrangement inequality the score-sorted
    ideal order scores at least the average), but it charges w for any spread of the scores
    within a class (at scale t, H grows as t times the gap between the score-sorted ideal
    order and the average), and on OHSUMED w = 0 is its minimum at every C. With ``anchor``
    (one number per document), y* puts the goods first and orders each class by decreasing
    anchor score (ties: input order): the latent form (module docstring)."""
    n = len(s)
    n_good = int(z.sum())
    discount = paper_discount(n, k)
    ideal = discount[:n_good].sum()
    decay = dorm_decay(n, cut)
    ranks = n if cut is None or k is None else min(n, max(int(cut), int(k)))
    profit = s[:, None] * decay[None, :ranks] - z[:, None] * discount[None, :ranks] / ideal
    rows, cols = linear_sum_assignment(profit, maximize=True)
    a_pred = np.zeros(n)
    a_pred[rows] = decay[cols]  # documents left unassigned sit beyond R, where A = 0
    if anchor is None:
        a_star = np.where(z, decay[:n_good].mean(), decay[n_good:].mean())
    else:
        a_star = np.empty(n)
        a_star[np.lexsort((-anchor, ~z))] = decay  # goods first, each class by the anchor
    coef = a_star - a_pred
    delta = 1.0 - (z[rows] * discount[cols]).sum() / ideal
    return float(delta - s @ coef), coef
