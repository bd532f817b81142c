"""The "did it learn" check: a model whose objective did not fall, or that ranks no better than
random, is flagged; the random ranking's metrics match their expectation."""

from __future__ import annotations

import numpy as np
import pytest

from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.learning import learning_check, random_metrics


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
