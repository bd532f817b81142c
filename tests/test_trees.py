"""MART and random forests through LightGBM: they learn, the objective is the training mean
squared error from the label variance, MART stops early on validation NDCG@10, the forest
averages subsampled trees, save/load, parameter errors; and both on real OHSUMED (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from losscheck import mean_metric, ohsumed_shaped, random_ndcg
from rankstudy.rankers.forest import RandomForest
from rankstudy.rankers.mart import MART
from rankstudy.util.params import ParamError
from rankstudy.rankers.registry import load_ranker, make_ranker



@pytest.fixture(scope="module")
def splits():
    return ohsumed_shaped(0, n_queries=30, noise=2.0), ohsumed_shaped(1, n_queries=15, noise=2.0), \
        ohsumed_shaped(2, n_queries=15, noise=2.0)


@pytest.fixture(scope="module")
def mart(splits):
    train, vali, _ = splits
    return MART(n_estimators=300, early_stopping_rounds=20).fit(train, vali)


@pytest.fixture(scope="module")
def forest(splits):
    train, vali, _ = splits
    return RandomForest(n_estimators=40).fit(train, vali)


@pytest.mark.parametrize("name", ["mart", "forest"])
def test_learns_and_lowers_the_training_mse_from_the_label_variance(name, request, splits):
    model = request.getfixturevalue(name)
    train, _, test = splits
    trace = model.objective_trace_
    assert trace["start"] == pytest.approx(np.var(train.y))
    kept = model.history_[model.best_iteration_ - 1]
    assert trace["final"] == pytest.approx(kept["train_l2"])
    # the objective curve (the step metric every ranker logs) is the training l2 of every round
    assert [h["objective"] for h in model.history_] == [h["train_l2"] for h in model.history_]
    # the l2 LightGBM reports is the mean squared error of the kept model's predictions
    assert trace["final"] == pytest.approx(np.mean((model.predict(train) - train.y) ** 2), rel=1e-6)
    assert trace["final"] < 0.9 * trace["start"]
    assert mean_metric(model.predict(test), test) > random_ndcg(test) + 0.1


def test_mart_stops_early_on_validation_ndcg(mart):
    vali = [h["vali_ndcg@10"] for h in mart.history_]
    assert {"train_ndcg@10", "train_l2", "vali_ndcg@10", "vali_l2"} <= set(mart.history_[0])
    assert vali[mart.best_iteration_ - 1] == max(vali)
    assert len(vali) == mart.best_iteration_ + 20 < 300
    assert mart.booster_.current_iteration() == mart.best_iteration_


def test_forest_keeps_every_tree_and_its_trees_differ(forest, splits):
    assert forest.best_iteration_ == len(forest.history_) == 40
    params = forest.lightgbm_params()
    assert params["boosting"] == "rf" and params["bagging_freq"] == 1 and params["bagging_fraction"] < 1
    train = splits[0]
    one = forest.booster_.predict(train.X, num_iteration=1)
    assert not np.allclose(one, forest.predict(train))  # 40 subsampled trees average to another model


def test_forest_early_stopping_when_asked(splits):
    train, vali, _ = splits
    model = RandomForest(n_estimators=200, early_stopping_rounds=5).fit(train, vali)
    assert model.best_iteration_ < len(model.history_) < 200


@pytest.mark.parametrize("name", ["mart", "forest"])
def test_save_load_round_trip_gives_identical_scores(name, request, splits, tmp_path):
    model = request.getfixturevalue(name)
    model.save(tmp_path / "m.json")
    loaded = load_ranker(tmp_path / "m.json")
    assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.predict(splits[2]), model.predict(splits[2]))
    assert loaded.objective_trace_ == model.objective_trace_


@pytest.mark.parametrize("kind, params, message", [
    ("mart", {"learning_rate": 0}, r"mart: learning_rate must be a number > 0, got 0"),
    ("mart", {"num_leaves": 1}, r"mart: num_leaves must be an integer >= 2"),
    ("random_forest", {"bagging_fraction": 1.0}, r"random_forest: bagging_fraction must be a number > 0 and < 1, got 1.0"),
    ("random_forest", {"feature_fraction": 0}, r"random_forest: feature_fraction must be a number > 0 and <= 1"),
    ("random_forest", {"learning_rate": 0.1}, r"unknown parameter.*'learning_rate'.*random_forest"),
])
def test_bad_parameters_are_refused_naming_them(kind, params, message):
    with pytest.raises(ValueError, match=message):
        make_ranker(kind, params)


def test_non_integer_labels_are_refused(splits):
    train = splits[0]
    bad = type(train)(X=train.X, y=train.y + 0.5, qid=train.qid, docid=train.docid, offsets=train.offsets)
    with pytest.raises(ValueError, match="MART needs non-negative integer relevance labels"):
        MART(n_estimators=2).fit(bad)
    assert issubclass(ParamError, ValueError)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mart", "random_forest"])
def test_learns_on_real_ohsumed(kind, ohsumed_fold):
    """Fold 1, QueryLevelNorm, graded labels: test NDCG@10 clearly above random, the training MSE
    below the label variance."""
    splits = ohsumed_fold(1)
    train, vali, test = splits["train"], splits["vali"], splits["test"]
    model = make_ranker(kind).fit(train, vali)
    scores = model.predict(test)
    ndcg, ap, random = mean_metric(scores, test), mean_metric(scores, test, "map"), random_ndcg(test)
    print(f"\n{kind} OHSUMED fold 1: test NDCG@10 {ndcg:.4f}, MAP {ap:.4f} (random NDCG@10 {random:.4f}); "
          f"trees kept {model.best_iteration_}; objective {model.objective_trace_}")
    assert ndcg > random + 0.1
    assert model.objective_trace_["final"] < model.objective_trace_["start"]
