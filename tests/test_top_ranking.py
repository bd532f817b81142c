"""The top k of every query's ranking (evaluation.top_ranking): the same documents in the same
order as the full sort in each query's top k, whatever the hint, with ties, short queries and
-inf scores; the metrics that read only the top give bit for bit the values of a full ranking;
a ranking is refused beyond its k."""

from __future__ import annotations

import numpy as np
import pytest

from rankstudy.data.blocks import positions
from rankstudy.evaluation.metrics import per_query, per_query_ranked
from rankstudy.evaluation.ranking import rank_flat
from rankstudy.evaluation.top_ranking import TopRanker


def awkward_split(rng, graded: bool = True):
    """Queries of 1 to 29 documents, integer or half labels, scores with many ties and a -inf."""
    lengths = rng.integers(1, 30, size=rng.integers(1, 20))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.integers(0, 5, n).astype(float) / (1.0 if graded else 2.0)
    return labels, offsets


def tied_scores(rng, n):
    scores = rng.integers(0, 4, n) * 1.0 + (rng.random(n) < 0.3) * rng.random(n)
    if rng.random() < 0.2:
        scores[rng.integers(n)] = -np.inf
    return scores


@pytest.mark.parametrize("seed", range(6))
def test_the_top_is_the_full_sorts_top_whatever_the_hint(seed):
    rng = np.random.default_rng(seed)
    for _ in range(30):
        labels, offsets = awkward_split(rng, graded=bool(rng.integers(2)))
        k = int(rng.integers(1, 15))
        ranker, hint = TopRanker(labels, offsets, k), None
        top = positions(offsets) < ranker.k
        for _ in range(4):
            scores = tied_scores(rng, len(labels))
            ranking, full = ranker.rank(scores, hint), rank_flat(scores, labels, offsets)
            np.testing.assert_array_equal(ranking.order[top], full.order[top])
            np.testing.assert_array_equal(ranking.flat_labels[top], full.flat_labels[top])
            assert sorted(ranking.order.tolist()) == list(range(len(labels)))  # a permutation
            for name in (f"ndcg@{k}", f"err@{k}", f"mrr@{k}", f"p@{k}"):
                expected = per_query(scores, labels, offsets, [name])[name]
                np.testing.assert_array_equal(per_query_ranked(ranking, [name])[name], expected, err_msg=name)
            hint = ranking if rng.random() < 0.7 else None  # a hint from other scores, or none


def test_a_far_hint_only_costs_candidates():
    # the hint ranks the documents in the reverse order: every document is a candidate, same top
    rng = np.random.default_rng(7)
    labels, offsets = awkward_split(rng)
    ranker = TopRanker(labels, offsets, 3)
    scores = rng.normal(size=len(labels))
    reverse = ranker.rank(-scores)
    top = positions(offsets) < ranker.k
    np.testing.assert_array_equal(ranker.rank(scores, reverse).order[top], rank_flat(scores, labels, offsets).order[top])


def test_a_ranking_is_refused_below_its_top():
    labels, offsets = np.array([1.0, 0, 2, 0]), np.array([0, 4])
    ranking = TopRanker(labels, offsets, 2).rank(np.array([0.1, 0.2, 0.3, 0.4]))
    np.testing.assert_array_equal(ranking.top_labels(2), [[0.0, 2.0]])
    with pytest.raises(ValueError, match="exact in its top 2 only, not 3"):
        ranking.top_labels(3)
    with pytest.raises(ValueError, match="scores have 3 rows, the split 4"):
        TopRanker(labels, offsets, 2).rank(np.zeros(3))
