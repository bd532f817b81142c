"""Smoothed metric losses (l2): gradients vs finite differences, the temperature -> 0 limit
against rankstudy.evaluation.metrics, hand-worked values, padding, chunking, bounded memory, learning."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from rankstudy.data.blocks import pad
from rankstudy.evaluation.metrics import per_query
from rankstudy.losses.registry import check_loss_options
from rankstudy.losses.smoothed import smoothed_err, smoothed_mrr, smoothed_ndcg
from rankstudy.scorers.linear import LinearScorer
from rankstudy.solvers.objective import Objective

SMOOTHED_LOSSES = {"smoothed_ndcg": smoothed_ndcg, "smoothed_err": smoothed_err, "smoothed_mrr": smoothed_mrr}
from losscheck import finite_difference, linear_signal_data, peak_bytes, relative_error

# (loss, options, exact metric name, per_query options) for the limit test
CASES = [
    (smoothed_ndcg, {}, "ndcg", {}),
    (smoothed_ndcg, {"k": 3}, "ndcg@3", {}),
    (smoothed_ndcg, {"k": 10}, "ndcg@10", {}),
    (smoothed_err, {}, "err", {}),
    (smoothed_err, {"n_levels": 6}, "err", {"max_label": 5}),
    (smoothed_mrr, {}, "mrr", {}),
    (smoothed_mrr, {"rel_threshold": 2.0}, "mrr", {"rel_threshold": 2.0}),
]
CASE_IDS = [f"{fn.__name__}-{metric}-{'-'.join(map(str, kw.values()))}" for fn, kw, metric, _ in CASES]


def make_batch(seed: int = 0, lengths=(1, 2, 5, 7, 3, 7, 4, 6, 12)):
    """Padded batch with a single-document query (0), an all-equal-label query (3), an
    all-zero query (4: no relevant document), label ties (labels 0..3) and padding."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    labels = rng.integers(0, 4, n).astype(float)
    labels[offsets[3]:offsets[4]] = 2.0
    labels[offsets[4]:offsets[5]] = 0.0
    labels[offsets[-2]] = 3.0  # so the labels reach 3 whatever the seed
    scores = rng.normal(size=n)
    s, mask = pad(scores, offsets)
    y, _ = pad(labels, offsets)
    return s, y, mask, scores, labels, offsets


@pytest.mark.parametrize("fn,kw,metric,metric_kw", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("temperature", [1.0, 0.3])
def test_gradient_matches_finite_differences(fn, kw, metric, metric_kw, temperature):
    s, y, mask, *_ = make_batch(0)
    loss = lambda x: fn(x, y, mask, temperature=temperature, **kw)
    value, grad = loss(s)
    numeric = finite_difference(lambda x: loss(x)[0], s)
    assert np.abs(grad).max() > 0
    assert relative_error(grad, numeric) < 1e-5
    assert np.all(grad[~mask] == 0)
    assert 0.0 < value < 1.0


def has_terms(fn, kw, labels_q):
    """Two or more documents and the metric defined (something relevant), decided from the
    labels alone."""
    relevant = labels_q >= kw.get("rel_threshold", 1.0) if fn is smoothed_mrr else labels_q > 0
    return len(labels_q) >= 2 and relevant.any()


@pytest.mark.parametrize("fn,kw,metric,metric_kw", CASES, ids=CASE_IDS)
def test_zero_temperature_limit_is_the_exact_metric(fn, kw, metric, metric_kw):
    """Tie-free scores at least 0.05 apart: at temperature 1e-3 every sigmoid is within
    e^-50 of its indicator, so 1 - loss is the exact metric: of each query with terms alone,
    and as their mean on the whole batch. A moderate temperature is clearly off."""
    _, y, mask, _, labels, offsets = make_batch(1)
    rng = np.random.default_rng(1)
    scores = 0.05 * rng.permutation(len(labels)).astype(float)  # distinct, gaps >= 0.05
    s, _ = pad(scores, offsets)
    exact = per_query(scores, labels, offsets, [metric], **metric_kw)[metric]
    active = np.array([has_terms(fn, kw, labels[offsets[q]:offsets[q + 1]]) for q in range(len(exact))])
    assert active.sum() >= 5 and (~active).sum() >= 2
    value, _ = fn(s, y, mask, temperature=1e-3, **kw)
    assert 1 - value == pytest.approx(exact[active].mean(), abs=1e-12)
    # one query at a time; |L| must then be the batch's (the default is per call)
    one_kw = {"n_levels": int(labels.max()) + 1, **kw} if fn is smoothed_err else kw
    far_off = 0.0
    for q in np.flatnonzero(active):
        one = slice(q, q + 1)
        value, _ = fn(s[one], y[one], mask[one], temperature=1e-3, **one_kw)
        assert 1 - value == pytest.approx(exact[q], abs=1e-12)
        far_off = max(far_off, abs(1 - fn(s[one], y[one], mask[one], temperature=0.5, **one_kw)[0] - exact[q]))
    assert far_off > 1e-3  # the smoothing is real at a moderate temperature


def test_hand_values():
    mask2 = np.ones((1, 2), dtype=bool)
    zeros = np.zeros((1, 2))
    # equal scores: each smoothed position is 1 + sigmoid(0) = 1.5
    value, _ = smoothed_ndcg(zeros, np.array([[1.0, 0.0]]), mask2)
    assert value == pytest.approx(1 - 1 / math.log2(2.5), rel=1e-12)
    # ERR with |L| = 2: R = (1/2, 0): (1/2) / 1.5 -> 1 - 1/3
    value, _ = smoothed_err(zeros, np.array([[1.0, 0.0]]), mask2)
    assert value == pytest.approx(2 / 3, rel=1e-12)
    # MRR, two relevant documents: each (1/1.5) * (1 - 1/2) -> 1 - 2/3
    value, _ = smoothed_mrr(zeros, np.array([[1.0, 1.0]]), mask2)
    assert value == pytest.approx(1 / 3, rel=1e-12)
    # NDCG@1 with its smoothed cut: cut = sigmoid((1.5 - 1.5) / 1) = 1/2
    value, _ = smoothed_ndcg(zeros, np.array([[1.0, 0.0]]), mask2, k=1)
    assert value == pytest.approx(1 - 0.5 / math.log2(2.5), rel=1e-12)
    # the better document is pushed up, the other down
    _, grad = smoothed_ndcg(zeros, np.array([[1.0, 0.0]]), mask2)
    assert grad[0, 0] < 0 < grad[0, 1]


@pytest.mark.parametrize("name", sorted(SMOOTHED_LOSSES))
def test_padding_content_changes_nothing(name):
    s, y, mask, *_ = make_batch(2)
    fn = SMOOTHED_LOSSES[name]
    value, grad = fn(s, y, mask)
    s2, y2 = s.copy(), y.copy()
    rng = np.random.default_rng(0)
    s2[~mask] = rng.choice([np.nan, np.inf, -np.inf, 1e6, -7.0], size=(~mask).sum())
    y2[~mask] = rng.integers(0, 4, (~mask).sum())
    value2, grad2 = fn(s2, y2, mask)
    assert value2 == value
    np.testing.assert_array_equal(grad2, grad)


@pytest.mark.parametrize("name", sorted(SMOOTHED_LOSSES))
def test_extra_padding_columns_change_nothing(name):
    s, y, mask, *_ = make_batch(3)
    wide = lambda a, fill: np.concatenate([a, np.full((a.shape[0], 5), fill)], axis=1)
    fn = SMOOTHED_LOSSES[name]
    value, grad = fn(s, y, mask)
    value2, grad2 = fn(wide(s, 9.0), wide(y, 3.0), wide(mask, False))
    assert value2 == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(grad2[:, : s.shape[1]], grad, rtol=1e-12, atol=1e-15)
    assert np.all(grad2[:, s.shape[1]:] == 0)


@pytest.mark.parametrize("name", sorted(SMOOTHED_LOSSES))
def test_queries_without_terms_are_ignored(name):
    """A single document, or no relevant document: the metric cannot depend on the scores."""
    s, y, mask, *_ = make_batch(4)
    fn = SMOOTHED_LOSSES[name]
    value, _ = fn(s, y, mask)
    extra_mask = np.zeros((2, s.shape[1]), dtype=bool)
    extra_mask[0, 0] = True
    extra_mask[1, :4] = True
    extra_y = np.zeros((2, s.shape[1]))
    extra_y[0, 0] = 3.0  # relevant, but alone
    extra_s = np.where(extra_mask, np.arange(s.shape[1]), 0.0)
    value2, grad2 = fn(np.vstack([s, extra_s]), np.vstack([y, extra_y]), np.vstack([mask, extra_mask]))
    assert value2 == pytest.approx(value, rel=1e-12)
    assert np.all(grad2[-2:] == 0)


@pytest.mark.parametrize("name", sorted(SMOOTHED_LOSSES))
def test_chunking_and_row_tiles_do_not_change_result(name):
    rng = np.random.default_rng(6)
    lengths = np.array([300, 3, 12, 1, 40, 7])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    s, mask = pad(rng.normal(size=offsets[-1]), offsets)
    y, _ = pad(rng.integers(0, 5, offsets[-1]).astype(float), offsets)
    fn = SMOOTHED_LOSSES[name]
    value, grad = fn(s, y, mask)
    for block_elements in (1, 5000):
        value_b, grad_b = fn(s, y, mask, block_elements=block_elements)
        assert value_b == pytest.approx(value, rel=1e-12)
        np.testing.assert_allclose(grad_b, grad, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("name", sorted(SMOOTHED_LOSSES))
def test_tiny_temperature_and_large_gaps_stay_finite(name):
    s = np.array([[0.0, 900.0, -900.0, 1.0]])
    y = np.array([[1.0, 0.0, 1.0, 2.0]])
    value, grad = SMOOTHED_LOSSES[name](s, y, np.ones_like(s, dtype=bool), temperature=1e-6)
    assert np.isfinite(value) and np.all(np.isfinite(grad))


def test_bad_options_are_rejected():
    for name in SMOOTHED_LOSSES:  # by the declarations, before any job
        for bad in (0.0, -1.0, np.inf):
            with pytest.raises(ValueError, match="temperature must be a number > 0"):
                check_loss_options(name, {"temperature": bad})
    for bad in (0, -2, 2.5):
        with pytest.raises(ValueError, match="k must be an integer >= 1 or null"):
            check_loss_options("smoothed_ndcg", {"k": bad})
    s, y, mask, *_ = make_batch(0)
    with pytest.raises(ValueError, match="n_levels"):  # by the loss, which sees the labels
        smoothed_err(s, y, mask, n_levels=3)  # labels reach 3


@pytest.mark.parametrize("fn,kw", [(smoothed_ndcg, {"k": 10}), (smoothed_err, {})])
def test_long_query_memory_is_bounded(fn, kw):
    """A 1,000-document query stays under 32 MB of peak allocation (a dense 1000 x 1000
    float64 array is 8 MB and these losses need about ten), and doubling it to 2,000
    documents barely moves the peak (dense blocks would quadruple it)."""
    peak_1000 = peak_bytes(fn, 1000, **kw)
    peak_2000 = peak_bytes(fn, 2000, **kw)
    assert peak_1000 < 32 * 2**20
    assert peak_2000 < 1.3 * peak_1000


@pytest.mark.parametrize("fn,kw", [(smoothed_ndcg, {"k": 10}), (smoothed_ndcg, {}),
                                   (smoothed_err, {}), (smoothed_mrr, {})])
def test_linear_model_beats_random(fn, kw):
    train, test = linear_signal_data(0), linear_signal_data(1)
    objective = Objective(LinearScorer().bind(train), lambda s, y, m: fn(s, y, m, **kw), train, l2=1e-3)
    result = minimize(objective, np.zeros(objective.n_params), jac=True, method="L-BFGS-B",
                      options={"maxiter": 100})
    random_scores = np.random.default_rng(2).normal(size=len(test.y))
    trained = per_query(test.X @ result.x, test.y, test.offsets, ["ndcg@10"])["ndcg@10"].mean()
    random = per_query(random_scores, test.y, test.offsets, ["ndcg@10"])["ndcg@10"].mean()
    assert trained > random + 0.25, (trained, random)
