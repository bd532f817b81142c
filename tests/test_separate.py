"""Separate-representation functionals (Tran Eqs. 2-3): scores against a per-answer
reference, finite-difference gradients of the full objective wrt [A, B], the local
softmax-best loss, learning on the synthetic QA data (MRR well above random), history,
save/load and parameter checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankstudy.data.blocks import pad
from rankstudy.losses.registry import LOSSES
from rankstudy.evaluation.metrics import per_query
from rankstudy.data.synthetic_qa import make_qa_parts
from rankstudy.data.rotation import fold_splits as qa_fold_splits
from rankstudy.rankers.base import NotFittedError
from rankstudy.rankers.registry import RANKERS, load_ranker
from rankstudy.scorers.separate import SeparateScorer, separate_scores
from rankstudy.rankers.separate import SeparateRanker
from rankstudy.solvers.objective import Objective


@pytest.fixture(scope="module")
def small():
    """A few questions, small vocabularies: cheap to difference numerically."""
    return make_qa_parts(seed=1, n_questions=30, vocab_size=25, answers=(1, 6))[0]


@pytest.fixture(scope="module")
def splits():
    return qa_fold_splits(make_qa_parts(seed=0), 1)


def reference_scores(data, A, B, functional, activation, tau):
    """Per-answer loop straight from Eqs. 2-3 (dense vectors)."""
    Y, Z = data.query_vectors.toarray(), data.object_vectors.toarray()
    sigma = {"tanh": np.tanh, "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x))}[activation]
    out = []
    for q in range(data.n_queries):
        for o in range(data.offsets[q], data.offsets[q + 1]):
            a, b = A @ Y[q], B @ Z[o]
            out.append(sigma(a) @ b if functional == "f1" else -np.sum((a - b) ** 2) / tau)
    return np.array(out)


@pytest.mark.parametrize("functional, activation", [("f1", "tanh"), ("f1", "sigmoid"), ("f2", "tanh")])
def test_scores_match_equations(small, functional, activation):
    rng = np.random.default_rng(0)
    A, B = rng.normal(0, 0.3, (4, 25)), rng.normal(0, 0.3, (4, 25))
    scores, _ = separate_scores(small, A, B, functional, activation, tau=2.5)
    np.testing.assert_allclose(scores, reference_scores(small, A, B, functional, activation, 2.5), rtol=1e-12)


@pytest.mark.parametrize("functional, activation", [("f1", "tanh"), ("f1", "sigmoid"), ("f2", "tanh")])
@pytest.mark.parametrize("loss", ["ranknet", "multiclass_logistic", "smoothed_mrr"])
def test_objective_gradient_matches_finite_differences(small, functional, activation, loss):
    loss_fn = LOSSES[loss]
    scorer = SeparateScorer(functional=functional, activation=activation, d=3, tau=3.0)
    objective = Objective(scorer.bind(small), loss_fn, small, l2=0.05)
    theta = np.random.default_rng(2).normal(0, 0.2, objective.n_params)
    value, grad = objective(theta)
    assert np.isfinite(value) and grad.shape == theta.shape
    assert np.abs(grad).max() > 1e-3  # a non-trivial point, else the check proves nothing
    eps = 1e-6
    basis = np.eye(len(theta))
    numeric = np.array([(objective(theta + eps * e, need_grad=False)[0]
                         - objective(theta - eps * e, need_grad=False)[0]) / (2 * eps) for e in basis])
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)


def test_multiclass_logistic_is_minus_log_probability_of_the_best(small):
    rng = np.random.default_rng(5)
    scores = rng.normal(size=small.n_docs)
    s, mask = pad(scores, small.offsets)
    y, _ = pad(small.y, small.offsets)
    value, grad = LOSSES["multiclass_logistic"](s, y, mask)
    terms = []
    for q in range(small.n_queries):
        a, b = small.offsets[q], small.offsets[q + 1]
        if b - a < 2:
            continue  # a lone answer is never ranked wrongly: no term
        p = np.exp(scores[a:b]) / np.exp(scores[a:b]).sum()
        terms.append(-np.log(p[small.y[a:b] == 1][0]))
    assert np.isclose(value, np.mean(terms))
    assert np.all(grad[~mask] == 0)


def test_separate_scorer_needs_question_answer_data(splits):
    from rankstudy.data.synthetic import make_parts

    with pytest.raises(ValueError, match="scores 'qa' data, got a 'letor' split"):
        SeparateScorer().bind(make_parts(n_queries=10)[0])
    with pytest.raises(ValueError, match="scores 'qa' data"):
        SeparateRanker(max_iter=2).fit(make_parts(n_queries=10)[0])


def mean_mrr(scores, data) -> float:
    return float(per_query(scores, data.y, data.offsets, ["mrr"])["mrr"].mean())


@pytest.fixture(scope="module")
def random_mrr(splits):
    test = splits["test"]
    rng = np.random.default_rng(0)
    return float(np.mean([mean_mrr(rng.random(test.n_docs), test) for _ in range(20)]))


@pytest.mark.parametrize("params", [
    {"functional": "f1", "activation": "tanh", "loss": "multiclass_logistic"},
    {"functional": "f1", "activation": "sigmoid", "loss": "ranknet"},
    {"functional": "f2", "loss": "multiclass_logistic"},
])
def test_learns_best_answers(splits, random_mrr, params):
    ranker = SeparateRanker(max_iter=120, **params).fit(splits["train"], splits["vali"])
    test = splits["test"]
    assert 0.3 < random_mrr < 0.45  # answers per question 2..12: about mean H_L / L
    assert mean_mrr(ranker.predict(test), test) > random_mrr + 0.2
    history = ranker.history_
    assert history[0]["step"] == 0 and len(history) == ranker.n_iter_ + 1
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert all("vali_loss" in h for h in history)


def test_save_load_gives_identical_scores(splits, tmp_path):
    assert RANKERS["separate"] is SeparateRanker
    ranker = SeparateRanker(functional="f2", tau=2.0, d=4, max_iter=15, seed=7).fit(splits["train"])
    path = tmp_path / "model.json"
    ranker.save(path)
    doc = json.loads(path.read_text())
    assert doc["kind"] == "separate" and doc["params"]["tau"] == 2.0
    back = load_ranker(path)
    assert isinstance(back, SeparateRanker) and back.get_params() == ranker.get_params()
    np.testing.assert_array_equal(back.predict(splits["test"]), ranker.predict(splits["test"]))
    assert back.history_ == ranker.history_


def test_same_seed_same_model_and_seed_matters(small):
    a = SeparateRanker(d=3, max_iter=10, seed=1).fit(small)
    b = SeparateRanker(d=3, max_iter=10, seed=1).fit(small)
    c = SeparateRanker(d=3, max_iter=10, seed=2).fit(small)
    np.testing.assert_array_equal(a.A_, b.A_)
    assert not np.allclose(a.A_, c.A_)


def test_checks(small, splits):
    with pytest.raises(ValueError, match="unknown functional"):
        SeparateRanker(functional="f3")
    with pytest.raises(ValueError, match="unknown activation"):
        SeparateRanker(activation="relu")
    with pytest.raises(ValueError, match="tau must be"):
        SeparateRanker(functional="f2", tau=0.0)
    with pytest.raises(ValueError, match="unknown loss"):
        SeparateRanker(loss="nope")
    with pytest.raises(ValueError, match="unknown option"):
        SeparateRanker(loss="ranknet", loss_params={"blocks": 3})
    with pytest.raises(NotFittedError):
        SeparateRanker().predict(small)
    ranker = SeparateRanker(d=2, max_iter=3).fit(small)
    assert ranker.A_.shape == (2, 25) and ranker.B_.shape == (2, 25)
    with pytest.raises(ValueError, match="expected 25 question and 25 answer features"):
        ranker.predict(splits["test"])
