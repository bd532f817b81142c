"""Tran et al. (2011) element-wise losses and weights: analytic gradients vs finite
differences for every loss x weight, values vs naive loops straight from the paper's
equations and vs hand-worked 3-document queries, padding invariance, WPL == ListMLE,
and a learning check with a linear model."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from scipy.optimize import minimize

from rankstudy.data.rankdata import RankData
from rankstudy.data.blocks import pad
from rankstudy.losses.elementwise import (
    ELEMENT_WEIGHTS,
    element_weights,
    multiclass_logistic,
    rpl,
    wpl,
    wpll,
)
from rankstudy.losses.baseline import listmle
from rankstudy.losses.padded import plackett_luce_order
from rankstudy.evaluation.metrics import ndcg
from rankstudy.losses.registry import LOSSES, check_loss_options
from rankstudy.scorers.linear import LinearScorer
from rankstudy.solvers.objective import Objective

from losscheck import finite_difference, make_batch, relative_error

ELEMENTWISE = ("multiclass_logistic", "weighted_regression", "wpl", "rpl", "wpll")

WEIGHTED = ["weighted_regression", "wpl", "rpl", "wpll"]
ALL_CASES = [("multiclass_logistic", None)] + [(n, w) for n in WEIGHTED for w in sorted(ELEMENT_WEIGHTS)]


def call(name, weight, s, y, mask, **kw):
    fn = LOSSES[name]
    return fn(s, y, mask, **kw) if weight is None else fn(s, y, mask, weight=weight, **kw)


def logsumexp(v):
    v = np.asarray(v, dtype=float)
    return float(v.max() + np.log(np.exp(v - v.max()).sum()))


# --------------------------------------------------------------------------- naive references

def mrf_log_potential(r, s, gamma):
    """log prod_{a<b} psi(r_a, r_b) of Eq. 14, psi = exp{gamma sign(r_a - r_b)(s_a - s_b)}."""
    n = len(r)
    return sum(gamma * np.sign(r[a] - r[b]) * (s[a] - s[b]) for a in range(n) for b in range(a + 1, n))


def reference_value(name, weight, s, y, mask, seed=0, n_levels=None):
    """Per-query loops from the equations, averaged over queries with terms."""
    order = plackett_luce_order(y, mask, seed)
    W = element_weights(weight or "unit", y, mask, order, n_levels)
    K = int(y[mask].max()) + 1 if n_levels is None else n_levels
    per_query = []
    for q in range(s.shape[0]):
        n = int(mask[q].sum())
        perm = order[q][:n]  # columns, best first
        sq, yq, wq = s[q], y[q], W[q]
        if name == "multiclass_logistic":
            real = yq[:n]
            if (real < real.max()).any():
                tops = [i for i in range(n) if real[i] == real.max()]
                per_query.append(np.mean([logsumexp(sq[:n]) - sq[i] for i in tops]))
        elif name == "weighted_regression" and n >= 1:
            per_query.append(sum(wq[i] * (sq[i] - yq[i]) ** 2 for i in range(n)))
        elif name == "wpl" and n >= 2:
            per_query.append(sum(wq[perm[k]] * (logsumexp(sq[perm[k:]]) - sq[perm[k]]) for k in range(n)))
        elif name == "rpl" and n >= 2:
            # Eq. 13: position N eliminated first from everyone, position k from positions 1..k
            per_query.append(sum(wq[perm[k]] * (sq[perm[k]] + logsumexp(-sq[perm[: k + 1]])) for k in range(n)))
        elif name == "wpll" and n >= 2:
            gamma = 2.0 / (n * (n - 1))
            r, f = yq[:n].copy(), sq[:n]
            total = 0.0
            for i in range(n):
                # Eq. 16's conditional straight from the joint of Eq. 14: relabel object i
                log_phi = []
                for c in range(K):
                    rc = r.copy()
                    rc[i] = c
                    log_phi.append(mrf_log_potential(rc, f, gamma))
                total += wq[i] * (logsumexp(log_phi) - log_phi[int(r[i])])
            per_query.append(total)
    return float(np.mean(per_query)) if per_query else 0.0


# --------------------------------------------------------------------------- gradients and values

@pytest.mark.parametrize("name,weight", ALL_CASES)
def test_gradient_matches_finite_differences(name, weight):
    s, y, mask = make_batch(1)
    value, grad = call(name, weight, s, y, mask)
    numeric = finite_difference(lambda x: call(name, weight, x, y, mask)[0], s)
    assert np.abs(grad).max() > 0
    assert relative_error(grad, numeric) < 1e-5
    assert np.all(grad[~mask] == 0)


@pytest.mark.parametrize("name,weight", ALL_CASES)
def test_value_matches_naive_loop_from_the_equations(name, weight):
    s, y, mask = make_batch(2)
    value, _ = call(name, weight, s, y, mask, seed=3)
    assert isinstance(value, float)
    assert value == pytest.approx(reference_value(name, weight, s, y, mask, seed=3), rel=1e-10)


@pytest.mark.parametrize("name", WEIGHTED)
def test_explicit_n_levels_matches_reference(name):
    s, y, mask = make_batch(6)
    value, _ = call(name, "exp_r", s, y, mask, n_levels=6)
    assert value == pytest.approx(reference_value(name, "exp_r", s, y, mask, n_levels=6), rel=1e-10)
    assert value != pytest.approx(call(name, "exp_r", s, y, mask)[0], rel=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_unit_wpl_is_listmle_exactly(seed):
    s, y, mask = make_batch(seed)
    value, grad = wpl(s, y, mask, seed=seed)
    ref_value, ref_grad = listmle(s, y, mask, seed=seed)
    assert value == ref_value
    np.testing.assert_array_equal(grad, ref_grad)


def test_weighted_wpl_differs_from_listmle():
    s, y, mask = make_batch(0)
    assert wpl(s, y, mask, weight="inv_pos")[0] != pytest.approx(listmle(s, y, mask)[0], rel=1e-6)


# --------------------------------------------------------------------------- hand-worked 3-document query

S3 = np.array([[1.0, 2.0, 0.5]])
Y3 = np.array([[2.0, 0.0, 1.0]])  # training permutation: doc0, doc2, doc1
M3 = np.ones((1, 3), dtype=bool)
e = math.exp


def test_wpl_by_hand():
    step1 = math.log(e(1.0) + e(2.0) + e(0.5)) - 1.0  # doc0 first among all
    step2 = math.log(e(0.5) + e(2.0)) - 0.5  # doc2 first among {doc2, doc1}
    assert wpl(S3, Y3, M3)[0] == pytest.approx(step1 + step2, rel=1e-12)
    assert wpl(S3, Y3, M3, weight="inv_pos")[0] == pytest.approx(step1 + step2 / 2, rel=1e-12)
    # r weights: 2, 1, 0 on doc0, doc2, doc1
    assert wpl(S3, Y3, M3, weight="r")[0] == pytest.approx(2 * step1 + step2, rel=1e-12)


def test_rpl_by_hand():
    step1 = 2.0 + math.log(e(-1.0) + e(-2.0) + e(-0.5))  # eliminate doc1 (worst) among all, worth e^-s
    step2 = 0.5 + math.log(e(-1.0) + e(-0.5))  # then doc2 among {doc0, doc2}
    assert rpl(S3, Y3, M3)[0] == pytest.approx(step1 + step2, rel=1e-12)
    assert rpl(S3, Y3, M3, weight="r")[0] == pytest.approx(0 * step1 + 1 * step2, rel=1e-12)
    assert rpl(S3, Y3, M3, weight="inv_pos")[0] == pytest.approx(step1 / 3 + step2 / 2, rel=1e-12)


def test_multiclass_logistic_by_hand():
    lse = math.log(e(1.0) + e(2.0) + e(0.5))
    value, grad = multiclass_logistic(S3, Y3, M3)
    assert value == pytest.approx(lse - 1.0, rel=1e-12)
    softmax = np.exp(S3 - lse)
    np.testing.assert_allclose(grad, softmax - [[1.0, 0.0, 0.0]], rtol=1e-12)
    # doc0 and doc2 share the top label: average of their -log P against the whole list
    tied = np.array([[2.0, 0.0, 2.0]])
    assert multiclass_logistic(S3, tied, M3)[0] == pytest.approx(lse - (1.0 + 0.5) / 2, rel=1e-12)


def test_wpll_by_hand():
    # gamma = 2/(3*2); labels (2, 0, 1); for object i, E(c) = gamma sum_{j!=i} sign(c - r_j)(s_i - s_j)
    g = 1.0 / 3.0
    s, r = S3[0], Y3[0]
    total = 0.0
    for i in range(3):
        energy = [g * sum(np.sign(c - r[j]) * (s[i] - s[j]) for j in range(3) if j != i) for c in range(3)]
        total += logsumexp(energy) - energy[int(r[i])]
    # object 1 (label 0, s=2): E(0) = g(-(2-1) - (2-0.5)) = -2.5g, E(1) = g(1 - 1.5) = -0.5g, E(2) = 2.5g
    assert logsumexp([-2.5 * g, -0.5 * g, 2.5 * g]) + 2.5 * g > 0
    assert wpll(S3, Y3, M3)[0] == pytest.approx(total, rel=1e-12)


# --------------------------------------------------------------------------- weights

def test_weights_on_a_hand_worked_query():
    # labels 1, 3, 0, 2 (+ padding) -> true positions 3, 1, 4, 2; |L| = 4
    y = np.array([[1.0, 3.0, 0.0, 2.0, 9.0]])
    mask = np.array([[True, True, True, True, False]])
    order = plackett_luce_order(y, mask, 0)
    expected = {
        "unit": [1, 1, 1, 1],
        "r": [1, 3, 0, 2],
        "sqrt_r": [1, math.sqrt(3), 0, math.sqrt(2)],
        "exp_r": [2.0 ** 0 / 2 ** 3, 2.0 ** 2 / 2 ** 3, 2.0 ** -1 / 2 ** 3, 2.0 ** 1 / 2 ** 3],
        "inv_pos": [1 / 3, 1, 1 / 4, 1 / 2],
        "inv_log_pos": [1 / math.log(4), 1 / math.log(2), 1 / math.log(5), 1 / math.log(3)],
    }
    assert set(expected) == set(ELEMENT_WEIGHTS)
    for name, values in expected.items():
        w = element_weights(name, y, mask, order)
        np.testing.assert_allclose(w[0, :4], values, rtol=1e-12, err_msg=name)
        assert w[0, 4] == 0
    # |L| = 5 halves the exp_r weights
    np.testing.assert_allclose(element_weights("exp_r", y, mask, order, 5)[0, :4],
                               np.array(expected["exp_r"]) / 2, rtol=1e-12)


def test_tied_positions_follow_the_seeded_order():
    y = np.array([[2.0, 0.0, 2.0, 2.0]])
    mask = np.ones((1, 4), dtype=bool)
    seen = set()
    for seed in range(20):
        order = plackett_luce_order(y, mask, seed)
        w = element_weights("inv_pos", y, mask, order)
        assert w[0, 1] == 1 / 4  # the only 0-label is last whatever the tie-break
        assert sorted(w[0, [0, 2, 3]]) == [1 / 3, 1 / 2, 1.0]
        assert 1 / w[0, order[0, 0]] == 1  # position = place in the permutation
        seen.add(tuple(order[0]))
    assert len(seen) > 1  # the seed does change the tie-break


def test_unknown_weight_lists_valid_names():
    for loss in ("weighted_regression", "wpl", "rpl", "wpll"):  # by the declaration, before any job
        with pytest.raises(ValueError) as info:
            check_loss_options(loss, {"weight": "ndcg"})
        assert "unknown weight 'ndcg'" in str(info.value)
        for name in ELEMENT_WEIGHTS:
            assert name in str(info.value)
    with pytest.raises(ValueError, match="n_levels must be an integer >= 1 or null"):
        check_loss_options("multiclass_logistic", {"n_levels": 0})


def test_bad_levels_and_labels_are_rejected():
    s, y, mask = make_batch(0)
    with pytest.raises(ValueError, match="n_levels"):
        wpl(s, y, mask, weight="exp_r", n_levels=3)  # labels go up to 3
    with pytest.raises(ValueError, match="integer labels"):
        wpll(s, np.where(mask, y + 0.5, 0.0), mask)
    with pytest.raises(ValueError, match="non-negative"):
        wpl(s, np.where(mask, y - 1.0, 0.0), mask, weight="sqrt_r")
    with pytest.raises(TypeError):
        multiclass_logistic(s, y, mask, weight="r")  # l1 has no weights: don't silently ignore


# --------------------------------------------------------------------------- padding and query handling

@pytest.mark.parametrize("name,weight", [(n, w) for n, w in ALL_CASES if w in (None, "inv_pos", "exp_r")])
def test_padding_content_changes_nothing(name, weight):
    s, y, mask = make_batch(3)
    value, grad = call(name, weight, s, y, mask)
    s2, y2 = s.copy(), y.copy()
    rng = np.random.default_rng(0)
    s2[~mask] = rng.choice([np.nan, np.inf, -np.inf, 1e6, -7.0], size=(~mask).sum())
    y2[~mask] = rng.choice([np.nan, 7.0, -3.0, 2.5], size=(~mask).sum())
    value2, grad2 = call(name, weight, s2, y2, mask)
    assert value2 == value
    np.testing.assert_array_equal(grad2, grad)


@pytest.mark.parametrize("name,weight", [(n, w) for n, w in ALL_CASES if w in (None, "inv_pos", "exp_r")])
def test_extra_padding_columns_change_nothing(name, weight):
    s, y, mask = make_batch(4)
    wide = lambda a, fill: np.concatenate([a, np.full((a.shape[0], 5), fill)], axis=1)
    value, grad = call(name, weight, s, y, mask)
    value2, grad2 = call(name, weight, wide(s, 9.0), wide(y, 3.0), wide(mask, False))
    assert value2 == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(grad2[:, : s.shape[1]], grad, rtol=1e-12, atol=1e-15)
    assert np.all(grad2[:, s.shape[1]:] == 0)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_single_document_queries(name):
    """Single documents are no term for the list losses (mean unchanged, zero gradient);
    the regression counts them (one term each)."""
    s, y, mask = make_batch(5)
    value, _ = call(name, None, s, y, mask)
    extra_s = np.zeros((2, s.shape[1]))
    extra_m = np.zeros_like(extra_s, dtype=bool)
    extra_m[:, 0] = True
    extra_y = np.zeros_like(extra_s)
    extra_y[:, 0] = 1.0
    value2, grad2 = call(name, None, np.vstack([s, extra_s]), np.vstack([y, extra_y]), np.vstack([mask, extra_m]))
    if name == "weighted_regression":
        n_queries = mask.any(axis=1).sum()
        total = value * n_queries + 2 * 1.0  # each extra doc: (0 - 1)^2
        assert value2 == pytest.approx(total / (n_queries + 2), rel=1e-12)
        assert np.all(grad2[-2:, 0] != 0)
    else:
        assert value2 == pytest.approx(value, rel=1e-12)
        assert np.all(grad2[-2:] == 0)


def test_multiclass_logistic_ignores_all_tied_queries_but_listwise_losses_do_not():
    s = np.array([[0.3, -1.0, 2.0]])
    y = np.full((1, 3), 2.0)
    mask = np.ones((1, 3), dtype=bool)
    assert multiclass_logistic(s, y, mask) == (0.0, pytest.approx(np.zeros((1, 3))))
    for fn in (wpl, rpl, wpll):
        value, grad = fn(s, y, mask)
        assert value > 0 and np.abs(grad).max() > 0


def test_wpll_chunking_changes_nothing():
    s, y, mask = make_batch(8, lengths=(1, 2, 5, 7, 3, 7, 4, 6, 12, 2, 9))
    value, grad = wpll(s, y, mask, weight="r")
    for block in (1, 30, 200):
        value2, grad2 = wpll(s, y, mask, weight="r", block_elements=block)
        assert value2 == pytest.approx(value, rel=1e-12)
        np.testing.assert_allclose(grad2, grad, rtol=1e-12, atol=1e-15)


def test_large_scores_stay_finite():
    s, y, mask = make_batch(9)
    s = s * 1e3
    for name, weight in ALL_CASES:
        value, grad = call(name, weight, s, y, mask)
        assert np.isfinite(value) and np.all(np.isfinite(grad)), (name, weight)


# --------------------------------------------------------------------------- learning check

def linear_signal_data(seed, n_queries=60, n_docs=15, n_features=8):
    rng = np.random.default_rng(seed)
    w_true = np.random.default_rng(100).normal(size=n_features)
    n = n_queries * n_docs
    X = rng.normal(size=(n, n_features))
    utility = X @ w_true + 0.5 * rng.normal(size=n)
    labels = np.digitize(utility, np.quantile(utility, [0.5, 0.75, 0.9, 0.97])).astype(float)
    offsets = np.arange(0, n + 1, n_docs)
    qid = np.repeat(np.arange(n_queries), n_docs)
    return RankData(X=X, y=labels, qid=qid, docid=np.arange(n).astype(str), offsets=offsets)


def mean_ndcg10(data, flat_scores):
    s, mask = pad(flat_scores, data.offsets)
    y, _ = pad(data.y, data.offsets)
    return float(ndcg(s, y, mask, k=10).mean())


@pytest.mark.parametrize("name,weight", [
    ("multiclass_logistic", None), ("weighted_regression", "unit"), ("weighted_regression", "r"),
    ("wpl", "unit"), ("wpl", "inv_log_pos"), ("rpl", "unit"), ("rpl", "inv_pos"),
    ("wpll", "unit"), ("wpll", "exp_r"),
])
def test_linear_model_learns_the_signal(name, weight):
    train, test = linear_signal_data(0), linear_signal_data(1)
    fn = LOSSES[name]
    loss = fn if weight is None else partial(fn, weight=weight)
    objective = Objective(LinearScorer(intercept=name == "weighted_regression").bind(train), loss, train, l2=1e-4)
    result = minimize(objective, np.zeros(objective.n_params), jac=True, method="L-BFGS-B",
                      options={"maxiter": 200})
    learned = mean_ndcg10(test, objective_scores(objective, result.x, test))
    random = np.mean([mean_ndcg10(test, np.random.default_rng(k).normal(size=len(test.y))) for k in range(5)])
    assert learned > random + 0.2, (learned, random)


def objective_scores(objective, theta, data):
    m = data.X.shape[1]
    s = data.X @ theta[:m]
    return s + theta[m] if objective.scorer.intercept else s
