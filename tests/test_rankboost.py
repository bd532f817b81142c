"""RankBoost: one round by hand, the vectorised r(f, theta) against a brute-force loop over
pairs, that it learns on the synthetic data, save/load, and parameter errors."""

from __future__ import annotations

import time

import numpy as np
import pytest

from rankstudy.data import synthetic
from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.metrics import per_query
from rankstudy.rankers.rankboost import RankBoost, all_r, crucial_pairs, threshold_candidates
from rankstudy.rankers.registry import load_ranker, make_ranker


def rankdata(X, y, lengths) -> RankData:
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return RankData(X=X, y=y, qid=np.repeat(np.arange(len(lengths)), lengths),
                    docid=np.arange(len(y)).astype(str), offsets=offsets)


def mean_ndcg10(scores, data: RankData) -> float:
    return float(per_query(scores, data.y, data.offsets, ["ndcg@10"])["ndcg@10"].mean())


# --------------------------------------------------------------------------- by hand

def test_one_round_by_hand():
    # labels 2, 1, 0, 0: pairs (0,1) (0,2) (0,3) (1,2) (1,3), D = 1/5 each, so
    # pi = (3/5, 1/5, -2/5, -2/5). Feature 0 sorts the documents 0, 1, 2, 3: r = 0.6, 0.8, 0.4
    # at thresholds 3.5, 2.5, 1.5; feature 1 only separates document 2: r = -0.4.
    data = rankdata([[4, 0], [3, 0], [2, 5], [1, 0]], [2, 1, 0, 0], [4])
    model = RankBoost(n_rounds=1).fit(data)
    r = 0.8
    assert model.features_.tolist() == [0]
    assert model.thresholds_.tolist() == [2.5]
    assert model.alphas_[0] == pytest.approx(0.5 * np.log((1 + r) / (1 - r)))  # = ln 3
    # pair (0,1) keeps its weight, the four others are ordered by h: weight * e^-alpha = 1/3
    loss = pytest.approx(0.2 * (1 + 4 / 3))
    assert model.history_ == [{"step": 1, "train_exp_loss": loss, "objective": loss}]
    assert model.best_round_ == 1
    np.testing.assert_allclose(model.predict(data), np.log(3) * np.array([1, 1, 0, 0]))


def test_initial_distribution_weights_queries_equally():
    # query 0: one pair; query 1: three pairs (2 > 1 > 0); query 2: all ties, no pair
    y = np.array([1, 0, 2, 1, 0, 3, 3], dtype=float)
    hi, lo, D = crucial_pairs(y, np.array([0, 2, 5, 7]))
    assert sorted(zip(hi.tolist(), lo.tolist())) == [(0, 1), (2, 3), (2, 4), (3, 4)]
    expected = {(0, 1): 1 / 2, (2, 3): 1 / 6, (2, 4): 1 / 6, (3, 4): 1 / 6}
    for h, l, d in zip(hi, lo, D):
        assert d == pytest.approx(expected[(h, l)])


def test_rel_threshold_binarises_the_labels_first():
    y = np.array([2, 1, 0, 0], dtype=float)
    hi, lo, _ = crucial_pairs((y >= 1).astype(float), np.array([0, 4]))
    assert len(hi) == 4  # 2 relevant x 2 non-relevant; the 2 > 1 pair is gone
    data = rankdata(np.arange(8.0).reshape(4, 2), y, [4])
    assert RankBoost(n_rounds=3, pairs="binary", rel_threshold=1).fit(data).best_round_ == 3


# --------------------------------------------------------------------------- vectorised r

def brute_force_r(X, hi, lo, D, f, theta) -> float:
    return sum(d * (float(X[h, f] > theta) - float(X[l, f] > theta)) for h, l, d in zip(hi, lo, D))


@pytest.mark.parametrize("max_thresholds", [None, 4])
def test_vectorised_r_matches_brute_force(max_thresholds):
    rng = np.random.default_rng(5)
    lengths = [6, 9, 4, 7]
    n = sum(lengths)
    X = np.round(rng.normal(size=(n, 4)), 1)  # rounded: many ties
    X[:, 3] = 1.0  # a constant feature has no threshold
    y = rng.integers(0, 3, n).astype(float)
    hi, lo, _ = crucial_pairs(y, np.concatenate([[0], np.cumsum(lengths)]))
    D = rng.random(len(hi))
    D /= D.sum()  # a non-uniform distribution, as after some rounds
    pi = np.bincount(hi, D, n) - np.bincount(lo, D, n)
    order, k, f, theta = threshold_candidates(X, max_thresholds)
    r = all_r(pi, order, k, f)
    for feature in range(X.shape[1]):
        values = np.unique(X[:, feature])
        midpoints = (values[:-1] + values[1:]) / 2
        mine = np.sort(theta[f == feature])
        if max_thresholds is None:
            np.testing.assert_allclose(mine, midpoints)
        else:
            assert len(mine) <= max_thresholds
            assert np.all(np.isclose(mine[:, None], midpoints[None, :]).any(axis=1))
    for j in range(len(k)):
        assert r[j] == pytest.approx(brute_force_r(X, hi, lo, D, f[j], theta[j]), abs=1e-12)


# --------------------------------------------------------------------------- learning

@pytest.fixture(scope="module")
def synthetic_splits():
    parts = synthetic.make_parts(seed=0, n_queries=150)
    return RankData.concat(parts[:3]), parts[3], parts[4]


@pytest.fixture(scope="module")
def fitted(synthetic_splits):
    train, vali, _ = synthetic_splits
    start = time.perf_counter()
    model = RankBoost(n_rounds=150).fit(train, vali)
    return model, time.perf_counter() - start


def test_rankboost_learns(synthetic_splits, fitted):
    _, _, test = synthetic_splits
    model, seconds = fitted
    rng = np.random.default_rng(0)
    random = float(np.mean([mean_ndcg10(rng.normal(size=len(test.y)), test) for _ in range(20)]))
    learnt = mean_ndcg10(model.predict(test), test)
    assert learnt > random + 0.1, (f"RankBoost test NDCG@10 {learnt:.4f} vs random {random:.4f} "
                                   f"({model.best_round_} rounds, fit {seconds:.2f} s)")


def test_history_and_best_round(fitted):
    model, _ = fitted
    assert [h["step"] for h in model.history_] == list(range(1, 151))
    losses = [h["train_exp_loss"] for h in model.history_]
    assert losses[0] < 1 and np.all(np.diff(losses) <= 1e-12)
    vali = {h["step"]: h["vali_ndcg@10"] for h in model.history_ if "vali_ndcg@10" in h}
    assert list(vali) == list(range(10, 151, 10))
    assert model.best_round_ == max(vali, key=vali.get) == len(model.alphas_)


def test_without_vali_keeps_every_round(synthetic_splits):
    model = RankBoost(n_rounds=7).fit(synthetic_splits[0])
    assert model.best_round_ == 7 and all(set(h) == {"step", "train_exp_loss", "objective"} for h in model.history_)


# --------------------------------------------------------------------------- save / load, errors

def test_save_load_round_trip(fitted, synthetic_splits, tmp_path):
    model, _ = fitted
    test = synthetic_splits[2]
    model.save(tmp_path / "rankboost.json")
    loaded = load_ranker(tmp_path / "rankboost.json")
    assert isinstance(loaded, RankBoost) and loaded.get_params() == model.get_params()
    assert loaded.best_round_ == model.best_round_ and loaded.history_ == model.history_
    np.testing.assert_array_equal(loaded.predict(test), model.predict(test))


def test_predict_checks_the_feature_count(fitted, synthetic_splits):
    test = synthetic_splits[2]
    with pytest.raises(ValueError, match="expected 24 features, got 23"):
        fitted[0].predict(test.with_features(test.X[:, :23]))


@pytest.mark.parametrize("params, message", [
    ({"n_rounds": 0}, "n_rounds must be an integer >= 1"),
    ({"n_rounds": 2.5}, "n_rounds must be an integer >= 1"),
    ({"n_rounds": True}, "n_rounds must be an integer >= 1"),
    ({"max_thresholds": 0}, "max_thresholds must be an integer >= 1 or null, got 0"),
    ({"rel_threshold": float("nan")}, "rel_threshold must be a number, got nan"),
    ({"rel_threshold": "1"}, "rel_threshold must be a number, got '1'"),
    ({"pairs": "bipartite"}, "unknown pairs 'bipartite'; valid: graded, binary"),
])
def test_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        RankBoost(**params)


def test_training_data_without_pairs_or_thresholds():
    with pytest.raises(ValueError, match="no crucial pair"):
        RankBoost().fit(rankdata([[1.0], [2.0], [3.0]], [1, 1, 1], [3]))
    with pytest.raises(ValueError, match="no crucial pair"):
        RankBoost(pairs="binary", rel_threshold=5).fit(rankdata([[1.0], [2.0], [3.0]], [0, 1, 2], [3]))
    with pytest.raises(ValueError, match="no feature takes two different values"):
        RankBoost().fit(rankdata([[1.0], [1.0], [1.0]], [0, 1, 2], [3]))


def test_make_ranker():
    model = make_ranker("rankboost", {"n_rounds": 5, "max_thresholds": None, "seed": 3})
    assert isinstance(model, RankBoost)
    assert model.get_params() == {"n_rounds": 5, "pairs": "graded", "rel_threshold": 1.0, "max_thresholds": None,
                                  "seed": 3}
    with pytest.raises(ValueError, match="unknown parameter.*'depth'.*valid parameters: n_rounds"):
        make_ranker("rankboost", {"depth": 3})
