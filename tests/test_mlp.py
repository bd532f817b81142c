"""The MLP scorer: its vjp against finite differences for every activation, input norm and with
dropout (exact for the mask drawn), pack/unpack, rows(), and deterministic prediction."""

from __future__ import annotations

import json

import numpy as np
import pytest

from losscheck import finite_difference, linear_signal_data, relative_error
from rankstudy.scorers.mlp import ACTIVATIONS, PARAMETERS, MLPScorer
from rankstudy.util.params import ParamError, check_value


@pytest.fixture(scope="module")
def data():
    return linear_signal_data(0, n_queries=5, n_features=4)


def perturbed_start(bound, seed=1):
    # the initial biases are 0; move them so every term of the vjp is exercised
    return bound.initial(np.random.default_rng(seed)) + 0.1 * np.random.default_rng(seed + 1).normal(size=bound.n_params)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("input_norm", [None, "batch", "layer"])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_vjp_matches_finite_differences(data, activation, input_norm, dropout):
    bound = MLPScorer(hidden=(5, 3), activation=activation, dropout=dropout, input_norm=input_norm).bind(data)
    theta = perturbed_start(bound)
    g = np.random.default_rng(3).normal(size=len(data.y))
    # the same seed gives the same dropout mask, so the function differentiated is fixed
    _, vjp = bound.train_forward(theta, np.random.default_rng(7))
    numeric = finite_difference(lambda t: float(g @ bound.train_forward(t, np.random.default_rng(7))[0]), theta)
    assert relative_error(vjp(g), numeric) < 1e-7
    _, vjp = bound.forward(theta)
    assert relative_error(vjp(g), finite_difference(lambda t: float(g @ bound.forward(t)[0]), theta)) < 1e-7


def test_layout_and_penalty(data):
    bound = MLPScorer(hidden=(5, 3)).bind(data)
    weights = 4 * 5 + 5 * 3 + 3 * 1
    assert (bound.n_penalized, bound.n_params) == (weights, weights + 5 + 3 + 1)
    theta = bound.initial(np.random.default_rng(0))
    assert np.all(theta[weights:] == 0) and np.std(theta[:20]) > 0  # biases start at 0, weights do not


def test_dropout_only_in_training_mode(data):
    bound = MLPScorer(hidden=(8,), dropout=0.5).bind(data)
    theta = perturbed_start(bound)
    assert np.array_equal(bound.scores(theta), bound.forward(theta)[0])
    assert np.array_equal(bound.scores(theta), bound.scores(theta))
    a = bound.train_forward(theta, np.random.default_rng(0))[0]
    b = bound.train_forward(theta, np.random.default_rng(1))[0]
    assert not np.allclose(a, b) and not np.allclose(a, bound.scores(theta))
    assert np.array_equal(a, bound.train_forward(theta, np.random.default_rng(0))[0])


@pytest.mark.parametrize("input_norm", [None, "batch"])
def test_pack_unpack_round_trip_through_json(data, input_norm):
    scorer = MLPScorer(hidden=(5, 3), input_norm=input_norm)
    bound = scorer.bind(data)
    theta = perturbed_start(bound)
    parts = json.loads(json.dumps(bound.unpack(theta)))
    assert np.array_equal(scorer.pack(parts), theta)
    assert scorer.feature_shape(parts) == (4,)
    again = MLPScorer(hidden=(5, 3), input_norm=input_norm, input_stats=parts if input_norm else None)
    other = linear_signal_data(5, n_queries=4, n_features=4)
    # a rebuilt scorer with the saved statistics scores new data as the original does
    assert np.array_equal(again.bind(other).scores(theta), scorer.bind(other).scores(theta))
    with pytest.raises(ValueError, match="do not match hidden"):
        MLPScorer(hidden=(5,)).pack(parts)


def test_batch_norm_statistics_come_from_the_first_split_bound(data):
    scorer = MLPScorer(hidden=(3,), input_norm="batch")
    scorer.bind(data)
    other = linear_signal_data(9, n_queries=5, n_features=4)
    other.X[:] = other.X * 10 + 3
    scorer.bind(other)
    assert np.allclose(scorer.input_stats["input_mean"], data.X.mean(axis=0))


def test_rows_score_as_the_whole(data):
    bound = MLPScorer(hidden=(6, 4), activation="tanh", input_norm="layer").bind(data)
    theta = perturbed_start(bound)
    rows = np.array([7, 2, 40, 3])
    assert np.allclose(bound.rows(rows).scores(theta), bound.scores(theta)[rows])
    g = np.random.default_rng(0).normal(size=len(rows))
    full = np.zeros(len(data.y))
    full[rows] = g
    assert np.allclose(bound.rows(rows).forward(theta)[1](g), bound.forward(theta)[1](full))


def test_chunked_prediction_matches(data, monkeypatch):
    bound = MLPScorer(hidden=(4,)).bind(data)
    theta = perturbed_start(bound)
    whole = bound.scores(theta)
    monkeypatch.setattr("rankstudy.scorers.mlp.SCORE_CHUNK", 7)
    assert np.allclose(bound.scores(theta), whole)


@pytest.mark.parametrize("name, value", [("hidden", [0]), ("hidden", 8), ("activation", "gelu"), ("dropout", 1.0),
                                         ("input_norm", "group"), ("input_transform", "log"), ("input_noise", -0.1)])
def test_the_declarations_refuse_bad_settings_naming_them(name, value):
    with pytest.raises(ParamError, match=name) as error:
        check_value(name, value, PARAMETERS[name].constraints)
    assert error.value.param == name
