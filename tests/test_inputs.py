"""DASALC's input tricks (rankstudy.scorers.inputs): log1p's values; noise drawn only in training
and only when asked; both scorers see the transformed features and noise only in their training
pass; a tiny neural fit learns with each trick, saves it with the model and predicts the same after
reloading."""

from __future__ import annotations

import numpy as np
import pytest

from losscheck import linear_signal_data
from rankstudy.evaluation.learning import random_metrics
from rankstudy.evaluation.metrics import evaluate, mean_metrics
from rankstudy.rankers.registry import load_ranker, make_ranker
from rankstudy.scorers.attention import AttentionScorer
from rankstudy.scorers.inputs import add_noise, transform
from rankstudy.scorers.mlp import MLPScorer


def test_log1p_is_the_signed_log_of_one_plus_the_magnitude():
    X = np.array([[0.0, 1.0, -1.0, np.e - 1.0, -(np.e ** 2 - 1.0), 1e-300, -3e8]])
    assert np.allclose(transform(X, "log1p"), [[0.0, np.log(2), -np.log(2), 1.0, -2.0, 1e-300, -np.log1p(3e8)]],
                       rtol=1e-15, atol=0)
    assert transform(X, "none") is X  # float64 features are not copied
    column = np.random.default_rng(0).normal(scale=1e3, size=50)
    assert np.array_equal(np.argsort(transform(column, "log1p")), np.argsort(column))  # the order is kept


def test_noise_is_drawn_only_in_training_and_only_when_asked():
    X = np.zeros((2000, 3))
    assert add_noise(X, 0.5, None) is X  # prediction: no generator, no noise
    rng = np.random.default_rng(1)
    assert add_noise(X, 0.0, rng) is X and rng.random() == np.random.default_rng(1).random()  # nothing drawn
    noisy = add_noise(X, 0.5, np.random.default_rng(1))
    assert abs(noisy.std() - 0.5) < 0.02 and not np.array_equal(noisy, add_noise(X, 0.5, np.random.default_rng(2)))


@pytest.fixture(scope="module")
def data():
    split = linear_signal_data(0, n_queries=4, n_features=3)
    return split.with_features(split.X * 50.0)  # features spread widely, as LETOR's raw ones


def scorers(**tricks):
    return [MLPScorer(hidden=(4,), **tricks), AttentionScorer(d_model=4, n_blocks=1, d_ff=4, **tricks)]


@pytest.mark.parametrize("index", [0, 1], ids=["mlp", "attention"])
def test_the_scorers_see_transformed_features_and_noise_only_in_training(data, index):
    logged, plain = scorers(input_transform="log1p")[index], scorers()[index]
    bound = logged.bind(data)
    theta = bound.initial(np.random.default_rng(0))
    assert np.allclose(bound.scores(theta), plain.bind(data.with_features(transform(data.X, "log1p"))).scores(theta),
                       rtol=1e-12, atol=1e-12)
    noisy = scorers(input_noise=0.5)[index].bind(data)
    quiet = plain.bind(data)
    assert np.array_equal(noisy.scores(theta), quiet.scores(theta))  # prediction: no noise
    assert np.array_equal(noisy.forward(theta)[0], quiet.forward(theta)[0])
    first = noisy.train_forward(theta, np.random.default_rng(3))[0]
    assert not np.allclose(first, quiet.scores(theta))  # training: noise
    assert np.array_equal(first, noisy.train_forward(theta, np.random.default_rng(3))[0])  # from the generator
    assert np.array_equal(quiet.train_forward(theta, np.random.default_rng(3))[0], quiet.scores(theta))


@pytest.mark.parametrize("params", [{"input_transform": "log1p"}, {"input_noise": 0.3},
                                    {"scorer": "attention", "d_model": 8, "d_ff": 8, "n_blocks": 1, "epochs": 10,
                                     "input_transform": "log1p", "input_noise": 0.3}],
                         ids=["mlp-log1p", "mlp-noise", "attention-both"])
def test_a_tiny_fit_learns_with_each_trick_and_keeps_it_in_the_model(tmp_path, params):
    train, vali, test = (linear_signal_data(seed, n_queries=n) for seed, n in ((0, 60), (1, 20), (2, 30)))
    train, vali, test = (split.with_features(split.X * 50.0) for split in (train, vali, test))
    ranker = make_ranker("neural", {"hidden": [16, 8], "epochs": 20, "batch_size": 8, "learning_rate": 3e-3,
                                    **params}).fit(train, vali)
    assert ranker.objective_trace_["final"] < 0.9 * ranker.objective_trace_["start"]
    ndcg = mean_metrics(evaluate(test, ranker.predict(test), ["ndcg@10"]))["ndcg@10"]
    assert ndcg > random_metrics(test, ["ndcg@10"])["ndcg@10"] + 0.2
    assert np.array_equal(ranker.predict(test), ranker.predict(test))  # no noise in prediction
    ranker.save(tmp_path / "model.json")
    loaded = load_ranker(tmp_path / "model.json")
    assert {k: loaded.get_params()[k] for k in params if k.startswith("input")} == \
           {k: v for k, v in params.items() if k.startswith("input")}
    assert np.array_equal(loaded.predict(test), ranker.predict(test))
