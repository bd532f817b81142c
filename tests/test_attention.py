"""The attention scorer (JAX): its vjp against finite differences, with and without dropout;
each query scored in its own context only (padding masked), equivariant to the order of its
documents; pack/unpack; JAX not imported by a job that does not score with attention; the
neural ranker with it learns, reloads and is reproducible."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from losscheck import finite_difference, linear_signal_data, relative_error
from rankstudy.evaluation.learning import random_metrics
from rankstudy.evaluation.metrics import evaluate, mean_metrics
from rankstudy.rankers.registry import load_ranker, make_ranker
from rankstudy.scorers.attention import ACTIVATIONS, AttentionScorer


@pytest.fixture(scope="module")
def data():
    return linear_signal_data(0, n_queries=3, n_features=3)


def perturbed_start(bound, seed=1):
    return bound.initial(np.random.default_rng(seed)) + 0.1 * np.random.default_rng(seed + 1).normal(size=bound.n_params)


# d_model >= 3: a layer norm over 2 features is nearly a sign function, too sharp for finite differences
# each configuration compiles its own network (seconds): two run always, the rest with the slow tests
@pytest.mark.parametrize("activation, dropout, d_model, n_heads, n_blocks",
                         [("gelu", 0.2, 4, 2, 1), ("relu", 0.0, 3, 1, 2)]
                         + [pytest.param(a, p, 4, 2, 1, marks=pytest.mark.slow) for a in ACTIVATIONS for p in (0.0, 0.2)
                            if (a, p) != ("gelu", 0.2)])
def test_vjp_matches_finite_differences(data, activation, dropout, d_model, n_heads, n_blocks):
    scorer = AttentionScorer(d_model=d_model, n_blocks=n_blocks, n_heads=n_heads, d_ff=2, activation=activation,
                             dropout=dropout)
    bound = scorer.bind(data)
    theta = perturbed_start(bound)
    g = np.random.default_rng(3).normal(size=len(data.y))
    _, vjp = bound.train_forward(theta, np.random.default_rng(7))  # the same seed draws the same masks
    numeric = finite_difference(lambda t: float(g @ bound.train_forward(t, np.random.default_rng(7))[0]), theta)
    # 1e-6: the layer norms make the function curved enough to leave ~1e-7 of truncation error
    assert relative_error(vjp(g), numeric) < 1e-6


def test_each_query_in_its_own_context(data, monkeypatch):
    bound = AttentionScorer(d_model=8, n_heads=2, d_ff=8).bind(data)
    theta = perturbed_start(bound)
    whole = bound.forward(theta)[0]
    assert np.allclose(bound.scores(theta), whole)
    a, b = data.offsets[1], data.offsets[2]
    alone = bound.rows(np.arange(a, b)).scores(theta)
    assert np.allclose(alone, whole[a:b])  # other queries (and their padding) change nothing
    monkeypatch.setattr("rankstudy.scorers.attention.CHUNK_DOCS", 32)  # one query per chunk
    assert np.allclose(bound.scores(theta), whole)
    # the context matters: dropping a document of the query changes the others' scores
    assert not np.allclose(bound.rows(np.arange(a + 1, b)).scores(theta), whole[a + 1:b])
    # and the order of the documents does not (no positional encoding)
    order = np.random.default_rng(0).permutation(np.arange(a, b))
    assert np.allclose(bound.rows(order).scores(theta), whole[order])


def test_dropout_only_in_training_mode(data):
    bound = AttentionScorer(d_model=8, d_ff=8, dropout=0.5).bind(data)
    theta = perturbed_start(bound)
    assert np.array_equal(bound.scores(theta), bound.scores(theta))
    a = bound.train_forward(theta, np.random.default_rng(0))[0]
    assert not np.allclose(a, bound.scores(theta))
    assert np.array_equal(a, bound.train_forward(theta, np.random.default_rng(0))[0])


def test_pack_unpack_round_trip(data):
    scorer = AttentionScorer(d_model=4, n_blocks=1, d_ff=6)
    bound = scorer.bind(data)
    theta = perturbed_start(bound)
    parts = json.loads(json.dumps(bound.unpack(theta)))
    assert np.array_equal(scorer.pack(parts), theta) and scorer.feature_shape(parts) == (3,)
    with pytest.raises(ValueError, match="shape"):
        AttentionScorer(d_model=4, n_blocks=1, d_ff=5).pack(parts)


def test_the_neural_ranker_imports_jax_only_to_score_with_attention():
    code = ("import sys; from rankstudy.rankers.registry import make_ranker; "
            "r = make_ranker('neural', {'scorer': 'attention'}); assert 'jax' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_attention_ranker_learns_reloads_and_repeats(tmp_path):
    train, vali, test = (linear_signal_data(seed, n_queries=n) for seed, n in ((0, 60), (1, 20), (2, 30)))
    params = {"scorer": "attention", "d_model": 16, "n_blocks": 1, "d_ff": 16, "epochs": 8, "batch_size": 8,
              "learning_rate": 3e-3, "dropout": 0.1, "seed": 2}
    ranker = make_ranker("neural", params).fit(train, vali)
    assert ranker.objective_trace_["final"] < 0.95 * ranker.objective_trace_["start"]
    ndcg = mean_metrics(evaluate(test, ranker.predict(test), ["ndcg@10"]))["ndcg@10"]
    assert ndcg > random_metrics(test, ["ndcg@10"])["ndcg@10"] + 0.2
    ranker.save(tmp_path / "model.json")
    assert np.array_equal(load_ranker(tmp_path / "model.json").predict(test), ranker.predict(test))
    assert np.array_equal(make_ranker("neural", params).fit(train, vali).theta_, ranker.theta_)
