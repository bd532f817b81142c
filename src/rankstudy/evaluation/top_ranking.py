"""The top k of every query's ranking without sorting whole queries: what a metric with a
cutoff (``ndcg@k``, ``err@k``, ``mrr@k``, ``p@k``) reads, for a caller that ranks many score
vectors of one split (Coordinate Ascent's line searches).

:meth:`TopRanker.rank` returns a :class:`~rankstudy.evaluation.ranking.Ranking` whose first
min(k, n_q) positions of each query hold exactly the documents, in the order, that
:func:`~rankstudy.evaluation.ranking.rank_flat` puts there (descending score, ties in data
order); the query's other documents follow in data order. A metric that reads only the top k
positions and the query's labels as a set (:data:`TOP_METRICS`) then gives bit for bit the
values it gives on the full ranking: the same function runs on arrays of the same shape.

How: any k documents of a query bound its k-th best sort key from above (their largest key), so
only the documents with a key at most that bound can be in the top k. The bound comes from a
``hint`` (the previous call's ranking, whose top is usually near the new one); the candidates,
usually a few times k a query, are sorted by (query, key, data order), and their first k
a query are the top. The hint affects the cost only, never the result.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from rankstudy.data.blocks import positions, segment_ids
from rankstudy.evaluation import dcg
from rankstudy.evaluation.ranking import Ranking, sort_key

# metrics whose value is a function of the labels of the top k positions and of the query's
# labels as a set: ndcg@k (ideal DCG from the set), err@k (its max label and "has a graded
# relevant" from the set), mrr@k (0 when the first relevant is below k), p@k
TOP_METRICS = ("ndcg", "err", "mrr", "p")


class TopRanker:
    """Top-``k`` rankings of one split's queries (``labels`` flat, grouped by ``offsets``)."""

    def __init__(self, labels: np.ndarray, offsets: np.ndarray, k: int) -> None:
        self.labels = np.asarray(labels, dtype=np.float64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.lengths = np.diff(self.offsets)
        self.segment = segment_ids(self.offsets)
        width = int(self.lengths.max(initial=0))
        self.k = min(int(k), width)
        position = positions(self.offsets)
        in_top = position < self.k
        # flat positions of each query's top ranks (rank order) and of its other places
        self.top_slots = np.flatnonzero(in_top)
        self.rest_slots = np.flatnonzero(~in_top)
        # (Q, k) flat positions of the top ranks, clipped into the query, and which are real
        top_len = np.minimum(self.lengths, self.k)
        self.top_grid = self.offsets[:-1, None] + np.minimum(np.arange(self.k), np.maximum(top_len - 1, 0)[:, None])
        self.top_real = np.arange(self.k) < top_len[:, None]
        self.short = self.lengths <= self.k  # every document is in the top
        self.top_len = top_len
        self._ideal: dict[tuple, np.ndarray] = {}

    def bounds(self, key: np.ndarray, top: np.ndarray) -> np.ndarray:
        """(Q,) an upper bound of each query's k-th smallest key: the largest key among the
        documents of ``top`` ((Q, k) flat indices, the first ``top_len`` of each row real; +inf
        where the query has at most k documents)."""
        bound = np.where(self.top_real, key[top], -np.inf).max(axis=1, initial=-np.inf)
        bound[self.short] = np.inf
        return bound

    def rank(self, scores: np.ndarray, hint: "TopRanking | None" = None) -> "TopRanking":
        """The ranking of ``scores``, exact in each query's top k (module docstring). ``hint``:
        a former ranking of this ranker (default: each query's first k documents)."""
        scores = np.asarray(scores, dtype=np.float64)
        if len(scores) != len(self.labels):
            raise ValueError(f"scores have {len(scores)} rows, the split {len(self.labels)}")
        key = sort_key(scores)
        bound = self.bounds(key, self.top_grid if hint is None else hint.top)
        candidates = np.flatnonzero(key <= np.repeat(bound, self.lengths))
        ranked = candidates[_by_query_then_key(self.segment[candidates], key[candidates])]
        counts = np.bincount(self.segment[ranked], minlength=len(self.lengths))
        rank_in_query = np.arange(len(ranked)) - np.repeat(np.cumsum(counts) - counts, counts)
        top = np.zeros(self.top_real.shape, dtype=np.int64)
        top[self.top_real] = ranked[rank_in_query < self.k]  # top_len a query, query then rank order
        return TopRanking(self, scores, top)

    def ideal_dcg(self, discounts: np.ndarray, gain: str, rel_threshold: float) -> np.ndarray:
        """The ideal DCG, computed once per set of arguments: the labels never change."""
        cache_key = (discounts.tobytes(), gain, rel_threshold)
        if cache_key not in self._ideal:
            self._ideal[cache_key] = dcg.ideal_dcg_flat(self.labels, self.offsets, discounts, gain, rel_threshold)
        return self._ideal[cache_key]


class TopRanking(Ranking):
    """A ranking of :meth:`TopRanker.rank`. ``top``: (Q, k) flat indices of each query's top
    documents in rank order (0 past a query's end); the flat arrays (labels and order: the top,
    then the query's other documents in data order) are built on first use, as the metrics
    that read only :meth:`top_labels` and the ideal DCG (the ranker's, computed once) never
    need them."""

    def __init__(self, ranker: TopRanker, scores: np.ndarray, top: np.ndarray) -> None:
        self._ranker, self.top = ranker, top
        self.offsets = ranker.offsets
        self._source_scores = scores

    @cached_property
    def _source_index(self) -> np.ndarray:
        ranker = self._ranker
        top = self.top[ranker.top_real]
        is_top = np.zeros(len(ranker.labels), dtype=bool)
        is_top[top] = True
        order = np.empty(len(ranker.labels), dtype=np.int64)
        order[ranker.top_slots] = top
        order[ranker.rest_slots] = np.flatnonzero(~is_top)  # grouped by query, data order
        return order

    @cached_property
    def flat_labels(self) -> np.ndarray:
        return self._ranker.labels[self._source_index]

    def top_labels(self, k: int) -> np.ndarray:
        if k > self._ranker.k:
            raise ValueError(f"this ranking is exact in its top {self._ranker.k} only, not {k}")
        if "_padded" in self.__dict__:
            return self.labels[:, :k]
        return np.where(self._ranker.top_real[:, :k], self._ranker.labels[self.top[:, :k]], 0.0)

    def ideal_dcg(self, discounts: np.ndarray, gain: str, rel_threshold: float) -> np.ndarray:
        return self._ranker.ideal_dcg(discounts, gain, rel_threshold)


def _by_query_then_key(query: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The order of documents sorted by (query, key, data order): ``query`` nondecreasing, the
    documents in data order. One stable sort of ints (query, dense rank of the key) instead of
    np.lexsort, several times as slow on float keys."""
    m = len(key)
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    by_key = np.argsort(key)
    sorted_key = key[by_key]
    new_value = np.empty(m, dtype=bool)
    new_value[0] = True
    np.not_equal(sorted_key[1:], sorted_key[:-1], out=new_value[1:])
    dense = np.empty(m, dtype=np.int64)
    dense[by_key] = np.cumsum(new_value) - 1
    return np.argsort(query * m + dense, kind="stable")
