"""RankSVM's squared pairwise hinge in O(n log n + n K) per query instead of O(n^2) pairs
(Chapelle and Keerthi, "Efficient algorithms for ranking with SVMs", 2010): one sort by score,
then two sweeps with moving pointers over per-level prefix sums (K = the query's label levels).

For a pair y_i > y_j the term is (t_j - s_i)^2 where t_j = s_j + 1, when t_j > s_i. Sorted by
score, the j with s_j > s_i - 1 are a suffix and the i with s_i < s_j + 1 a prefix, so each
document's terms come from counts and sums of t (or s) over a suffix (prefix) restricted to lower
(higher) levels. A sort costs tens of ns per document, so short queries (most of LETOR 4.0's)
visit their pairs instead. Compiled because the pointer sweeps are sequential; kept at module
level so numba's on-disk cache is found by later processes; imported only when the loss is used,
since importing numba costs start-up time."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _query(s, ranks, n_levels, grad, cnt_below, t1_below, t2_below, cnt_above, s_above):
    """Sum of the query's pair terms; writes each document's derivative to ``grad``.
    ``s`` is sorted ascending and ``ranks`` are the label levels in that order; the last five
    arguments are work space of at least (n + 1, n_levels), one row per position."""
    n = s.shape[0]
    # *_below[k, r]: count, sum t, sum t^2 over the suffix k.. of documents with level < r
    for r in range(n_levels):
        cnt_below[n, r] = t1_below[n, r] = t2_below[n, r] = 0.0
    for k in range(n - 1, -1, -1):
        t = s[k] + 1.0
        for r in range(n_levels):
            below = r > ranks[k]
            cnt_below[k, r] = cnt_below[k + 1, r] + below
            t1_below[k, r] = t1_below[k + 1, r] + below * t
            t2_below[k, r] = t2_below[k + 1, r] + below * t * t
    # *_above[k, r]: count and sum s over the prefix ..k-1 of documents with level > r
    for r in range(n_levels):
        cnt_above[0, r] = s_above[0, r] = 0.0
    for k in range(n):
        for r in range(n_levels):
            above = r < ranks[k]
            cnt_above[k + 1, r] = cnt_above[k, r] + above
            s_above[k + 1, r] = s_above[k, r] + above * s[k]
    total = 0.0
    first = 0  # first position with s > s_i - 1 (rises with s_i)
    end = 0  # first position with s >= s_j + 1 (rises with s_j)
    for k in range(n):
        while first < n and s[first] <= s[k] - 1.0:
            first += 1
        while end < n and s[end] < s[k] + 1.0:
            end += 1
        r = ranks[k]
        c, t1, t2 = cnt_below[first, r], t1_below[first, r], t2_below[first, r]
        total += t2 - 2.0 * s[k] * t1 + c * s[k] * s[k]
        # as the higher document: d/ds_i (t_j - s_i)^2 = -2 (t_j - s_i); as the lower one:
        # d/ds_j (s_j + 1 - s_i)^2 = 2 (t_j - s_i)
        grad[k] = -2.0 * (t1 - c * s[k]) + 2.0 * (cnt_above[end, r] * (s[k] + 1.0) - s_above[end, r])
    return total


@numba.njit(cache=True, nogil=True)
def _pairs(s, y, cols, grad):
    """The same sum and derivatives by visiting the query's pairs: cheaper than sorting for a
    short query (below ~30 documents, a few ns per pair against ~60 ns per document)."""
    total = 0.0
    has_pair = False
    for a in cols:
        grad[a] = 0.0
    for a in cols:
        for b in cols:
            if y[a] > y[b]:
                has_pair = True
                d = 1.0 - (s[a] - s[b])
                if d > 0.0:
                    total += d * d
                    grad[a] -= 2.0 * d
                    grad[b] += 2.0 * d
    return total, has_pair


@numba.njit(cache=True, nogil=True)
def _levels(y, cols, rank_of, distinct):
    """Each column's label level (0 = lowest) into rank_of; the number of levels. The query's
    distinct labels are kept sorted in ``distinct`` (few, so insertion beats sorting the column)."""
    n_levels = 0
    for c in cols:
        v = y[c]
        pos = n_levels
        while pos > 0 and distinct[pos - 1] > v:
            pos -= 1
        if pos > 0 and distinct[pos - 1] == v:
            continue
        for b in range(n_levels, pos, -1):
            distinct[b] = distinct[b - 1]
        distinct[pos] = v
        n_levels += 1
    for c in cols:
        r = 0
        while distinct[r] < y[c]:
            r += 1
        rank_of[c] = r
    return n_levels


@numba.njit(cache=True, nogil=True)
def _sort_by(keys, perm, n):
    """Order perm[:n] by keys[perm] ascending, in place: insertion sort for queries up to 128
    documents (no allocation; faster than argsort there, measured on MQ2008), argsort above."""
    if n > 128:
        perm[:n] = perm[:n][np.argsort(keys[perm[:n]])]
        return
    for a in range(1, n):
        p = perm[a]
        key = keys[p]
        b = a - 1
        while b >= 0 and keys[perm[b]] > key:
            perm[b + 1] = perm[b]
            b -= 1
        perm[b + 1] = p


@numba.njit(cache=True, nogil=True)
def squared_hinge_sums(scores, labels, mask, grad, direct_max=32):
    """Per query (row): the sum of max(0, 1 - (s_i - s_j))^2 over its pairs y_i > y_j, and
    whether it has a pair; the rows' derivatives are written to ``grad`` (passed zeroed, so
    padding stays zero). Queries of at most ``direct_max`` documents visit their pairs, longer
    ones are sorted and swept."""
    n_queries, width = scores.shape
    totals = np.zeros(n_queries)
    active = np.zeros(n_queries, np.bool_)
    cols, by_score = np.empty(width, np.int64), np.empty(width, np.int64)
    rank_of = np.empty(width, np.int64)  # label level of each column
    distinct = np.empty(width)
    s_sorted, g_sorted = np.empty(width), np.empty(width)
    ranks = np.empty(width, np.int64)
    most_levels = 2
    work = np.empty((5, width + 1, most_levels))
    for q in range(n_queries):
        n = 0
        for k in range(width):
            if mask[q, k]:
                cols[n] = by_score[n] = k
                n += 1
        if n <= direct_max:
            totals[q], active[q] = _pairs(scores[q], labels[q], cols[:n], grad[q])
            continue
        n_levels = _levels(labels[q], cols[:n], rank_of, distinct)
        if n_levels < 2:
            continue
        active[q] = True
        if n_levels > most_levels:
            most_levels = n_levels
            work = np.empty((5, width + 1, most_levels))
        _sort_by(scores[q], by_score, n)
        for a in range(n):
            s_sorted[a] = scores[q, by_score[a]]
            ranks[a] = rank_of[by_score[a]]
        totals[q] = _query(s_sorted[:n], ranks[:n], n_levels, g_sorted, work[0], work[1], work[2], work[3], work[4])
        for a in range(n):
            grad[q, by_score[a]] = g_sorted[a]
    return totals, active
