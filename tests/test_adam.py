"""The minibatch Adam solver: list sampling, reproducibility, any scorer and loss, early stopping
with the best epoch kept, the schedules, clipping and weight decay, constraints kept."""

from __future__ import annotations

import numpy as np
import pytest

from losscheck import linear_signal_data
from rankstudy.losses.registry import bind_loss
from rankstudy.scorers.linear import LinearScorer
from rankstudy.scorers.mlp import MLPScorer
from rankstudy.solvers.adam import PARAMETERS, Adam, batch_rows
from rankstudy.solvers.objective import Objective
from rankstudy.solvers.registry import fits, make_solver
from rankstudy.losses.registry import LOSSES
from rankstudy.util.params import ParamError, check_value


@pytest.fixture(scope="module")
def splits():
    return linear_signal_data(0, n_queries=40), linear_signal_data(1, n_queries=20)


def objectives(splits, scorer, loss="listnet", l2=0.0):
    train, vali = splits
    return (Objective(scorer.bind(train), bind_loss(loss), train, l2),
            Objective(scorer.bind(vali), bind_loss(loss), vali, l2))


def test_batch_rows_keep_whole_queries_or_a_random_subset_in_order():
    offsets = np.array([0, 3, 10, 12, 20])
    rows, new = batch_rows(offsets, np.array([3, 0, 1]), None, np.random.default_rng(0))
    assert rows.tolist() == [12, 13, 14, 15, 16, 17, 18, 19, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert new.tolist() == [0, 8, 11, 18]
    seen = set()
    for seed in range(30):
        rows, new = batch_rows(offsets, np.array([3, 0, 1]), 4, np.random.default_rng(seed))
        assert new.tolist() == [0, 4, 7, 11]
        blocks = [rows[a:b] for a, b in zip(new[:-1], new[1:])]
        assert set(blocks[0]) <= set(range(12, 20)) and blocks[1].tolist() == [0, 1, 2]
        assert set(blocks[2]) <= set(range(3, 10))
        assert all(np.all(np.diff(b) > 0) for b in blocks)  # kept in their order
        seen |= set(blocks[0].tolist())
    assert seen == set(range(12, 20))  # every document gets sampled


def test_the_mlp_learns_and_the_best_epoch_is_kept(splits):
    train_obj, vali_obj = objectives(splits, MLPScorer(hidden=(8,)))
    theta0 = train_obj.initial(np.random.default_rng(0))
    solution = Adam(learning_rate=3e-3, epochs=15, batch_size=8, patience=None).solve(train_obj, theta0, vali_obj)
    history = solution.history
    assert [h["epoch"] for h in history] == list(range(16)) and "objective" in history[0]
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert history[-1]["vali_metric"] > history[0]["vali_metric"] + 0.2
    best = max(range(1, 16), key=lambda e: history[e]["vali_metric"])
    assert solution.best_step == best
    assert vali_obj.data_loss(solution.theta) == pytest.approx(history[best]["vali_loss"])


def test_same_seed_same_result_other_seed_other_result(splits):
    train_obj, vali_obj = objectives(splits, MLPScorer(hidden=(8,), dropout=0.2))
    theta0 = train_obj.initial(np.random.default_rng(0))

    def run(seed):
        return Adam(epochs=3, batch_size=8, max_list_length=10, seed=seed).solve(train_obj, theta0, vali_obj).theta

    assert np.array_equal(run(0), run(0))
    assert not np.allclose(run(0), run(1))


def test_early_stopping_stops_after_patience(splits):
    train_obj, vali_obj = objectives(splits, LinearScorer())
    # a linear scorer on this data is near its best after an epoch: the metric then stalls
    solution = Adam(learning_rate=0.1, epochs=200, batch_size=4, patience=3).solve(train_obj, np.zeros(8), vali_obj)
    assert solution.converged and len(solution.history) - 1 == solution.best_step + 3 < 200


@pytest.mark.parametrize("loss", ["ranknet", "listmle", "pointwise_mse", "smoothed_ndcg", "svm_map", "cdn"])
def test_any_loss_and_the_linear_scorer(splits, loss):
    bias = LOSSES[loss].bias
    train_obj, vali_obj = objectives(splits, LinearScorer(intercept=bias), loss, l2=1e-3)
    theta0 = train_obj.initial(np.random.default_rng(0))
    epochs = 2 if loss == "cdn" else 5  # the CDN is slow to evaluate
    solution = Adam(learning_rate=0.05, epochs=epochs, batch_size=8, patience=None).solve(train_obj, theta0, vali_obj)
    final = train_obj(solution.theta, need_grad=False)[0]
    assert final < solution.history[0]["objective"]
    assert np.all(solution.theta[train_obj.nonnegative] >= 0)  # the CDN's weights stay >= 0
    assert solution.history[solution.best_step]["vali_metric"] > 0.8


def test_schedules():
    cosine = Adam(learning_rate=1.0, schedule="cosine")
    assert [cosine.rate(s, 1, 4) for s in (0, 2, 4)] == pytest.approx([1.0, 0.5, 0.0])
    step = Adam(learning_rate=1.0, schedule="step", step_epochs=2, gamma=0.5)
    assert [step.rate(0, e, 10) for e in (1, 2, 3, 5)] == [1.0, 1.0, 0.5, 0.25]
    assert Adam(learning_rate=0.3).rate(7, 9, 10) == 0.3


def test_clipping_rescales_the_gradient_adam_steps_on(splits):
    """Adam's step is scale-free up to eps; with eps = 1 the first step is
    -lr * g / (|g| + 1), so it shows whether g was clipped to the global norm."""
    train_obj, _ = objectives(splits, LinearScorer())
    _, grad = train_obj(np.zeros(8))
    clipped = grad * (1e-3 / np.linalg.norm(grad))
    for clip, g in ((1e-3, clipped), (None, grad)):
        solution = Adam(learning_rate=0.01, epochs=1, batch_size=1000, clip_norm=clip, eps=1.0,
                        patience=None).solve(train_obj, np.zeros(8))
        assert np.allclose(solution.theta, -0.01 * g / (np.abs(g) + 1.0))
        assert solution.history[1]["grad_norm"] == pytest.approx(np.linalg.norm(grad))  # before clipping


def test_weight_decay_shrinks_weights_not_biases(splits):
    train, _ = splits
    obj = Objective(MLPScorer(hidden=(4,)).bind(train), bind_loss("pointwise_mse"), train, 0.0)
    theta0 = obj.initial(np.random.default_rng(0))
    plain = Adam(learning_rate=1e-3, epochs=2, batch_size=8, patience=None).solve(obj, theta0).theta
    decayed = Adam(learning_rate=1e-3, epochs=2, batch_size=8, patience=None, weight_decay=50.0).solve(obj, theta0).theta
    k = obj.scorer.n_penalized
    assert np.linalg.norm(decayed[:k]) < 0.95 * np.linalg.norm(plain[:k])


def test_registry_builds_adam_and_it_fits_every_loss():
    solver = make_solver("adam", {"seed": 4, "max_iter": 7}, {"learning_rate": 0.01, "batch_size": 3, "max_list_length": 5})
    assert isinstance(solver, Adam) and (solver.batch_size, solver.max_list_length, solver.seed) == (3, 5, 4)
    # the settings not given take Adam's declared defaults: one default each (epochs 50)
    assert (solver.epochs, make_solver("adam").epochs, Adam().epochs) == (50, 50, 50)
    assert all(fits("adam", entry, l2=0.0, linear=False) for entry in LOSSES.values())
    with pytest.raises(ValueError, match="unknown adam setting 'epoch'"):
        Adam(epoch=3)


@pytest.mark.parametrize("name, value", [("learning_rate", 0), ("schedule", "linear"), ("metric", "ndgc@10"),
                                         ("patience", 0), ("clip_norm", -1.0), ("max_list_length", 0),
                                         ("epochs", 0), ("gamma", 1.5)])
def test_the_declarations_refuse_bad_settings_naming_them(name, value):
    with pytest.raises(ParamError) as error:
        check_value(name, value, PARAMETERS[name].constraints)
    assert error.value.param == name


def test_each_epoch_scores_the_validation_split_once_for_its_metric_and_loss(splits):
    train_obj, vali_obj = objectives(splits, MLPScorer(hidden=(8,)))
    calls = []
    scores = vali_obj.scorer.scores
    vali_obj.scorer.scores = lambda theta: calls.append(1) or scores(theta)
    theta0 = train_obj.initial(np.random.default_rng(0))
    solution = Adam(learning_rate=3e-3, epochs=4, batch_size=8, patience=None).solve(train_obj, theta0, vali_obj)
    assert len(calls) == len(solution.history) == 5  # the start and 4 epochs, each scored once
    # the kept scores are those of the theta asked for, and cannot be changed by whoever reads them
    theta = solution.theta + 0.1
    fresh = vali_obj.scores(theta)
    assert np.array_equal(fresh, scores(theta)) and not fresh.flags.writeable
    assert vali_obj.data_loss(theta) == Objective(vali_obj.scorer, vali_obj.loss, splits[1], 0.0)(theta, False)[0]
