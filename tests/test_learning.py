"""The "did it learn" check: a model whose objective did not fall, or that ranks no better than
random, is flagged; the random ranking's metrics match their expectation."""

from __future__ import annotations

import numpy as np
import pytest

from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.learning import MAX_TIED_SHARE, learning_check, random_metrics, score_ties


def scores(vali: float, test: float) -> dict:
    return {"vali.ndcg@10": vali, "test.ndcg@10": test}


def test_a_model_that_learned_passes():
    verdict = learning_check({"start": 0.69, "final": 0.40}, "ndcg@10", scores(0.6, 0.55), scores(0.3, 0.3))
    assert verdict["learned"] and verdict["problems"] == []
    assert verdict["objective_drop"] == pytest.approx(0.29 / 0.69)
    assert verdict["over_random"] == pytest.approx({"vali": 0.3, "test": 0.25})


@pytest.mark.parametrize("final", [0.97605, 0.9755])  # rose (DORM on OHSUMED), or fell by 0.02%
def test_an_objective_that_did_not_fall_clearly_is_flagged(final):
    verdict = learning_check({"start": 0.97574, "final": final}, "ndcg@10", scores(0.6, 0.55), scores(0.3, 0.3))
    assert not verdict["learned"]
    assert "not clearly below its start" in verdict["problems"][0]


def test_a_ranking_no_better_than_random_is_flagged_per_split():
    verdict = learning_check(None, "ndcg@10", scores(0.305, 0.6), scores(0.3, 0.3))
    assert not verdict["learned"] and len(verdict["problems"]) == 1
    assert verdict["problems"][0].startswith("vali ndcg@10 0.3050 vs a random ranking's 0.3000")


def test_undefined_metrics_are_not_held_against_the_model():
    verdict = learning_check({"start": 1.0, "final": 0.5}, "ndcg@10", scores(np.nan, 0.6), scores(np.nan, 0.3))
    assert verdict["learned"] and set(verdict["over_random"]) == {"test"}


def test_random_metrics_match_their_expectation():
    """One relevant document among n: a random ranking's expected reciprocal rank is H_n / n and
    its expected precision@1 is 1/n."""
    n, queries = 8, 400
    y = np.tile(np.r_[1.0, np.zeros(n - 1)], queries)
    data = RankData(X=np.zeros((n * queries, 1)), y=y, qid=np.repeat(np.arange(queries), n), docid=np.arange(n * queries),
                    offsets=np.arange(0, n * queries + 1, n))
    got = random_metrics(data, ["mrr", "p@1"], draws=20)
    assert got["mrr"] == pytest.approx(np.sum(1 / np.arange(1, n + 1)) / n, abs=0.01)
    assert got["p@1"] == pytest.approx(1 / n, abs=0.01)


# ---------------------------------------------------------------- tied test scores


def loop_ties(scores: np.ndarray, offsets: np.ndarray) -> tuple[int, int, float]:
    """Queries of 2+ documents, how many have a single score value, and the mean share of
    distinct values: one query at a time with Python sets."""
    several = all_tied = 0
    shares = []
    for start, end in zip(offsets[:-1], offsets[1:]):
        if end - start < 2:
            continue
        several += 1
        distinct = len(set(scores[start:end].tolist()))
        all_tied += distinct == 1
        shares.append(distinct / (end - start))
    return several, all_tied, float(np.mean(shares))


def test_score_ties_count_queries_whose_scores_are_all_equal():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 12, size=60)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    scores = rng.integers(0, 4, size=offsets[-1]).astype(float)  # few values: ties within queries
    scores[offsets[5]:offsets[9]] = 0.25  # four queries all tied
    out = score_ties(scores, offsets)
    several, all_tied, share = loop_ties(scores, offsets)
    assert (out["queries"], out["all_tied"]) == (several, all_tied) and all_tied >= 4
    assert out["all_tied_share"] == pytest.approx(all_tied / several)
    assert out["distinct_share"] == pytest.approx(share)
    assert out["distinct_values"] == 5 and not out["flagged"]  # 0, 1, 2, 3 and 0.25
    assert score_ties(scores, offsets, max_tied_share=all_tied / several - 1e-9)["flagged"]


def test_a_test_feature_of_1e300_ties_every_score_of_a_linear_model_and_is_flagged():
    """The issue's trial: one test feature at 1e300 swamps the others in w.x, so every score of
    the split is the same number (the ranking is then the file's order); the check flags it, and
    the same model on the sane features is not flagged."""
    rng = np.random.default_rng(4)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(5, 30, size=40))])
    features = rng.normal(size=(offsets[-1], 8))
    w = rng.normal(size=8)
    sane = score_ties(features @ w, offsets)
    assert sane["all_tied"] == 0 and sane["distinct_share"] == 1.0 and not sane["flagged"]
    features[:, 3] = 1e300
    broken = score_ties(features @ w, offsets)
    assert len(np.unique(features @ w)) == 1  # the premise: every score equal
    assert broken["all_tied_share"] == 1.0 and broken["distinct_values"] == 1 and broken["flagged"]
    assert MAX_TIED_SHARE == 0.5


def test_scores_equal_up_to_rounding_are_tied_and_infinities_too():
    offsets = np.array([0, 3, 6, 8])
    scores = np.array([0.1 + 0.2, 0.3, 0.3, np.inf, np.inf, np.inf, 1.0, 2.0])  # 0.1 + 0.2 != 0.3 in floats
    out = score_ties(scores, offsets)
    assert out["all_tied"] == 2 and out["queries"] == 3 and out["flagged"]
