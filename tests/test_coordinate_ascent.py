"""Coordinate Ascent: RankLib's step schedule, line searches that never lower the training
metric and whose incremental scores equal the full product, the line search on each query's top
k equal to the step-by-step one on the full ranking (ties, short queries; whole fits too),
normalised weights, restarts kept by validation, the regulariser, save/load, parameter errors;
and real OHSUMED (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from losscheck import linear_signal_data, mean_metric, ohsumed_shaped, random_ndcg
from rankstudy.rankers.coordinate_ascent import CoordinateAscent
from rankstudy.rankers.registry import load_ranker, make_ranker
from rankstudy.util import intermediate



@pytest.fixture(scope="module")
def splits():
    return linear_signal_data(0, n_queries=40), linear_signal_data(1, n_queries=20), linear_signal_data(2, n_queries=30)


@pytest.fixture(scope="module")
def model(splits):
    return CoordinateAscent(restarts=2, line_steps=12).fit(splits[0], splits[1])


def test_step_schedule_is_ranklibs():
    ca = CoordinateAscent(line_steps=4)
    np.testing.assert_allclose(ca.trial_steps(0.5, 1), [0.001, 0.003, 0.007, 0.015])
    np.testing.assert_allclose(ca.trial_steps(0.5, -1), [-0.001, -0.003, -0.007, -0.015])
    # 0.001 would exceed half of |w_j| = 0.0015: the first step is 0.05 |w_j|, in each direction
    np.testing.assert_allclose(ca.trial_steps(-0.0015, -1), -0.000075 * np.array([1, 3, 7, 15]))
    np.testing.assert_allclose(ca.trial_steps(0.3, 0), [-0.3])  # drop the feature


def test_a_line_search_never_lowers_the_metric_and_its_scores_are_the_full_products(splits):
    train = splits[0]
    ca = CoordinateAscent(line_steps=10)
    rng = np.random.default_rng(3)
    for _ in range(10):
        w = rng.normal(size=train.n_features)
        w /= np.abs(w).sum()
        s = train.X @ w
        score = mean_metric(s, train)
        j = int(rng.integers(train.n_features))
        t, value = ca.line_search(w, s, j, score, train)
        assert value >= score
        moved = w.copy()
        moved[j] += t
        assert value == pytest.approx(mean_metric(train.X @ moved, train), abs=1e-12)
        if t == 0.0:
            assert value == score


class StepByStep(CoordinateAscent):
    """The line search as RankLib writes it (and as this module did before the top-k ranking):
    every trial step in turn, the metric over every query's full ranking."""

    kind = "coordinate_ascent"

    def line_search(self, w, s, j, score, train):
        x_j, best_t, best = train.X[:, j], 0.0, score
        trial = w.copy()
        for direction in (1, -1, 0):
            for t in self.trial_steps(float(w[j]), direction):
                trial[j] = w[j] + t
                value = self.mean_metric(s + t * x_j, train) - self.penalty(trial)
                if value > best:
                    best_t, best = float(t), value
            if best_t != 0.0:
                break
        return best_t, best


def short_tied_queries(seed):
    """OHSUMED-shaped (features in halves: many ties) with queries of 2 to 14 documents, so
    some are shorter than the cut at 10."""
    return ohsumed_shaped(seed, n_queries=30, n_docs=8, spread=6, n_features=6)


@pytest.mark.parametrize("metric, regularization", [("ndcg@10", 0.0), ("ndcg@3", 0.01), ("err@5", 0.0),
                                                    ("mrr@10", 0.0), ("p@5", 0.0), ("map", 0.0)])
def test_the_line_search_equals_the_step_by_step_one(metric, regularization):
    train = short_tied_queries(0)
    new = CoordinateAscent(metric=metric, line_steps=10, regularization=regularization)
    old = StepByStep(metric=metric, line_steps=10, regularization=regularization)
    rng = np.random.default_rng(5)
    moved = 0
    for _ in range(25):
        w = rng.normal(size=train.n_features) * (rng.random(train.n_features) < 0.8)
        w /= np.abs(w).sum()
        s = train.X @ w
        score = old.mean_metric(s, train) - old.penalty(w)
        j = int(rng.integers(train.n_features))
        got, expected = new.line_search(w, s, j, score, train), old.line_search(w, s, j, score, train)
        assert got == expected  # the same step and, bit for bit, the same score
        moved += got[0] != 0.0
    assert moved >= 5  # searches that moved and searches that did not


@pytest.mark.parametrize("metric", ["ndcg@10", "err@10"])
def test_a_fit_equals_the_step_by_step_fit(metric):
    train, vali = short_tied_queries(1), short_tied_queries(2)
    params = dict(metric=metric, restarts=2, max_iter=4, line_steps=8, seed=3)
    new, old = CoordinateAscent(**params).fit(train, vali), StepByStep(**params).fit(train, vali)
    np.testing.assert_array_equal(new.coef_, old.coef_)
    assert new.history_ == old.history_


class Watched(CoordinateAscent):
    """Checks at every line search that the incremental scores are the weights' scores."""

    kind = "coordinate_ascent"

    def line_search(self, w, s, j, score, train):
        np.testing.assert_allclose(s, train.X @ w, rtol=1e-9, atol=1e-12)
        assert score == pytest.approx(mean_metric(s, train) - self.penalty(w), abs=1e-12)
        return super().line_search(w, s, j, score, train)


@pytest.mark.parametrize("regularization", [0.0, 0.01])
def test_the_scores_follow_the_weights_through_a_pass(splits, regularization):
    Watched(restarts=1, max_iter=3, line_steps=8, regularization=regularization).fit(splits[0])


def test_training_metric_never_falls_within_a_restart_and_weights_are_normalised(model, splits):
    train = splits[0]
    assert np.abs(model.coef_).sum() == pytest.approx(1.0)
    key = "train_ndcg@10"
    for restart in {h["restart"] for h in model.history_}:
        curve = [h[key] for h in model.history_ if h["restart"] == restart]
        assert curve[0] == pytest.approx(mean_metric(train.X.mean(axis=1), train))  # the uniform start
        assert np.all(np.diff(curve) >= -1e-12), curve
        assert [h["objective"] for h in model.history_ if h["restart"] == restart] == [1 - v for v in curve]
        assert len(curve) - 1 <= model.max_iter
    trace = model.objective_trace_
    assert trace["start"] == pytest.approx(1 - model.history_[0][key])
    assert trace["final"] == pytest.approx(1 - mean_metric(model.predict(train), train))
    assert trace["final"] < trace["start"] - 0.2


def test_learns_the_signal(model, splits):
    test = splits[2]
    assert mean_metric(model.predict(test), test) > random_ndcg(test) + 0.3


def test_restarts_differ_and_the_best_on_validation_is_kept(splits):
    train, vali, _ = splits
    runs = [CoordinateAscent(restarts=1, line_steps=12, seed=s).fit(train) for s in range(3)]
    assert not np.allclose(runs[0].coef_, runs[1].coef_)  # the feature orders differ
    model = CoordinateAscent(restarts=3, line_steps=12).fit(train, vali)
    ends = [h["vali_ndcg@10"] for h in model.history_ if "vali_ndcg@10" in h]
    assert len(ends) == 3 and len(set(ends)) > 1
    assert mean_metric(model.predict(vali), vali) == max(ends)


def test_other_metrics_train_too(splits):
    train = splits[0]
    model = CoordinateAscent(metric="map", restarts=1, line_steps=12).fit(train)
    assert model.objective_trace_["final"] == pytest.approx(1 - mean_metric(model.predict(train), train, "map"))
    assert model.objective_trace_["final"] < model.objective_trace_["start"] - 0.2
    assert "train_map" in model.history_[-1]


def test_regularization_is_ranklibs_distance_and_holds_the_weights_near_uniform(splits, model):
    ca = CoordinateAscent(regularization=0.5)
    w = np.array([0.5, -0.25, 0.25, 0.0])
    # RankLib's getDistance: || w / |w|_1 - u / |u|_1 ||_2 with u uniform
    assert ca.penalty(w) == pytest.approx(0.5 * np.sqrt(0.25 ** 2 + 0.5 ** 2 + 0 + 0.25 ** 2))
    assert CoordinateAscent().penalty(w) == 0.0
    held = CoordinateAscent(regularization=1.0, restarts=1, line_steps=12).fit(splits[0])
    uniform = np.full(len(held.coef_), 1 / len(held.coef_))
    assert np.linalg.norm(held.coef_ - uniform) < np.linalg.norm(model.coef_ - uniform)


def test_save_load_round_trip_gives_identical_scores(model, splits, tmp_path):
    model.save(tmp_path / "ca.json")
    loaded = load_ranker(tmp_path / "ca.json")
    assert isinstance(loaded, CoordinateAscent) and loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.predict(splits[2]), model.predict(splits[2]))
    assert loaded.history_ == model.history_ and loaded.objective_trace_ == model.objective_trace_


@pytest.mark.parametrize("params, message", [
    ({"metric": "ndcg@0"}, r"coordinate_ascent: metric must be a metric name .*got 'ndcg@0'"),
    ({"metric": "foo"}, r"coordinate_ascent: metric must be a metric name"),
    ({"restarts": 0}, r"coordinate_ascent: restarts must be an integer >= 1, got 0"),
    ({"regularization": -1.0}, r"coordinate_ascent: regularization must be a number >= 0"),
    ({"max_iter": 2.5}, r"coordinate_ascent: max_iter must be an integer >= 1"),
])
def test_bad_parameters_are_refused_naming_them(params, message):
    with pytest.raises(ValueError, match=message):
        make_ranker("coordinate_ascent", params)


def test_mismatched_features_are_refused(model, splits):
    train = splits[0]
    narrow = type(train)(X=train.X[:, :3], y=train.y, qid=train.qid, docid=train.docid, offsets=train.offsets)
    with pytest.raises(ValueError, match="expected 8 features, got 3"):
        model.predict(narrow)


@pytest.mark.slow
def test_learns_on_real_ohsumed(ohsumed_fold):
    """Fold 1, QueryLevelNorm, graded labels, RankLib's defaults but 2 restarts (time): test
    NDCG@10 clearly above random, 1 - training NDCG@10 below its start."""
    splits = ohsumed_fold(1)
    train, vali, test = splits["train"], splits["vali"], splits["test"]
    model = CoordinateAscent(restarts=2).fit(train, vali)
    scores = model.predict(test)
    ndcg, ap, random = mean_metric(scores, test), mean_metric(scores, test, "map"), random_ndcg(test)
    print(f"\ncoordinate_ascent OHSUMED fold 1: test NDCG@10 {ndcg:.4f}, MAP {ap:.4f} (random NDCG@10 "
          f"{random:.4f}); passes {len(model.history_)}; objective {model.objective_trace_}")
    assert ndcg > random + 0.1
    assert model.objective_trace_["final"] < model.objective_trace_["start"]


def test_tunings_pruner_hears_the_best_validation_so_far_after_every_pass_and_the_fit_is_unchanged(splits, model):
    heard = []
    with intermediate.listened(lambda step, value: heard.append((step, value))):
        fit = CoordinateAscent(restarts=2, line_steps=12).fit(splits[0], splits[1])
    passes = [h for h in fit.history_ if h["pass"] > 0]
    assert [s for s, _ in heard] == list(range(1, len(passes) + 1))
    np.testing.assert_array_equal(fit.coef_, model.coef_)  # listening changes nothing
    kept = max(h[f"vali_{fit.metric}"] for h in fit.history_ if f"vali_{fit.metric}" in h)
    assert heard[-1][1] == pytest.approx(kept)  # the last pass ends the kept restart's best

    def stop(step, value):
        if step == 2:
            raise intermediate.Pruned(step)

    with intermediate.listened(stop), pytest.raises(intermediate.Pruned):
        CoordinateAscent(restarts=2, line_steps=12).fit(splits[0], splits[1])
