"""RankBoost's distribution over the crucial pairs (every within-query pair with y[i] > y[j]) held
through per-document potentials instead of a weight per pair. The initial distribution is uniform
within a query, c_q for each of its pairs (queries weighted equally), and every round multiplies
a pair's weight by exp(alpha (h(j) - h(i))), so after any rounds
D(i, j) = c_q exp(s(j) - s(i)) / L, with s the current score (the sum of alpha h) and L the
normalisation: the product form of the paper's RankBoost.B (bipartite feedback), which holds for
graded labels too because the pairs of a query are a union of label-group products. The paper's
potential pi(x) = sum_j D(x, j) - sum_i D(i, x) then needs, per document, only the sums of
exp(s) over the query's lower label groups and of exp(-s) over its higher ones: O(n) time and
memory per round whatever the number of pairs (about 66 a document on MSLR-WEB30K-shaped data).
Sums run in log space, so no score range overflows."""

from __future__ import annotations

import numpy as np


def _segment_logsumexp(t: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """log sum exp(t) over each contiguous segment [starts[g], starts[g] + sizes[g])."""
    top = np.maximum.reduceat(t, starts)
    return top + np.log(np.add.reduceat(np.exp(t - np.repeat(top, sizes)), starts))


class CrucialPairs:
    """The crucial pairs of (y, offsets) as label groups: documents sorted by (query, label),
    each (query, label) a contiguous group; queries without a pair left out (their pi is 0).
    Memory: a few integers a document and a (queries x most labels in a query) table."""

    def __init__(self, y: np.ndarray, offsets: np.ndarray):
        n = len(y)
        lengths = np.diff(offsets)
        qid = np.repeat(np.arange(len(lengths)), lengths)
        docs = np.lexsort((y, qid))  # by query, then label ascending
        gq, gk, sizes = self._groups(qid[docs], y[docs])
        # pairs of a group's documents with every document of a lower group of its query
        below = self._exclusive_cumsum(sizes, gq, gk)
        pairs = np.bincount(gq, weights=sizes * below, minlength=len(lengths))
        if not pairs.any():
            raise ValueError("RankBoost: the training data has no crucial pair (no query holds two "
                             "documents with different labels)")
        keep = pairs[qid[docs]] > 0
        docs = docs[keep]
        gq, gk, sizes = self._groups(qid[docs], y[docs])
        queries, gq = np.unique(gq, return_inverse=True)  # numbered among the queries with a pair
        self.n, self.docs = n, docs
        self.gq, self.gk, self.sizes = gq, gk, sizes
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.group = np.repeat(np.arange(len(sizes)), sizes)  # each sorted document's group
        # log c_q: each query's pairs share 1 / (queries with a pair), so sum D = 1 at the start
        log_c = -np.log(pairs[queries]) - np.log(len(queries))
        self.log_c = log_c[gq][self.group]
        self.table = (len(queries), int(gk.max()) + 2)  # a column of log 0 either side

    @staticmethod
    def _groups(qs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query, rank within the query, size) of each (query, label) run of sorted documents."""
        n = len(qs)
        first = np.flatnonzero(np.r_[True, (qs[1:] != qs[:-1]) | (ys[1:] != ys[:-1])])
        sizes = np.diff(np.r_[first, n])
        gq = qs[first]
        query_first = np.flatnonzero(np.r_[True, gq[1:] != gq[:-1]])
        gk = np.arange(len(gq)) - np.repeat(query_first, np.diff(np.r_[query_first, len(gq)]))
        return gq, gk, sizes

    @staticmethod
    def _exclusive_cumsum(values: np.ndarray, gq: np.ndarray, gk: np.ndarray) -> np.ndarray:
        """Per group, the sum of ``values`` over the lower groups of its query."""
        table = np.zeros((int(gq.max()) + 1, int(gk.max()) + 2))
        table[gq, gk + 1] = values
        return np.cumsum(table, axis=1)[gq, gk]

    def potential(self, s: np.ndarray) -> tuple[np.ndarray, float]:
        """(pi, log L) for scores s: pi(x) = sum_j D(x, j) - sum_i D(i, x) over the crucial pairs
        of D(i, j) = c_q exp(s(j) - s(i)) / L, and L = sum over the pairs of c_q exp(s(j) - s(i)),
        the exponential pair loss of s under the initial distribution (1 at s = 0)."""
        t = s[self.docs]
        gq, gk = self.gq, self.gk
        # log sum of exp(s) over the lower groups of each group's query; of exp(-s) over the higher
        table = np.full(self.table, -np.inf)
        table[gq, gk + 1] = _segment_logsumexp(t, self.starts, self.sizes)
        lower = np.logaddexp.accumulate(table, axis=1)[gq, gk]
        table.fill(-np.inf)
        table[gq, gk] = _segment_logsumexp(-t, self.starts, self.sizes)
        higher = np.logaddexp.accumulate(table[:, ::-1], axis=1)[:, ::-1][gq, gk + 1]
        out_log = self.log_c - t + lower[self.group]  # log of sum_j D(x, j) L
        in_log = self.log_c + t + higher[self.group]  # log of sum_i D(i, x) L
        top = out_log.max()
        log_total = float(top + np.log(np.exp(out_log - top).sum()))
        pi = np.zeros(self.n)
        pi[self.docs] = np.exp(out_log - log_total) - np.exp(in_log - log_total)
        return pi, log_total
