"""Losses: analytic gradients vs finite differences, values vs naive per-query loops,
padding invariance, pairwise chunking, ListMLE tie-break and numerical stability."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankstudy.data.blocks import pad
from rankstudy.losses.registry import LOSSES, get_loss
from rankstudy.losses.baseline import listmle, ranknet, ranksvm
from rankstudy.losses.padded import clean, pair_term_sum, plackett_luce_order, preference_pairs, query_weights
from losscheck import finite_difference, make_batch, relative_error

BASELINE = ["listmle", "listnet", "pointwise_mse", "ranknet", "ranksvm"]  # reference_value knows these


def reference_value(name, s, y, mask, seed=0):
    """Per-query loops straight from the definitions, averaged over queries with terms."""
    order = plackett_luce_order(y, mask, seed)
    per_query = []
    for q in range(s.shape[0]):
        sq, yq = s[q][mask[q]], y[q][mask[q]]
        n = len(sq)
        if name == "pointwise_mse":
            per_query.append(np.mean((sq - yq) ** 2))
        elif name in ("ranknet", "ranksvm"):
            terms = []
            for i in range(n):
                for j in range(n):
                    if yq[i] > yq[j]:
                        d = sq[i] - sq[j]
                        terms.append(math.log1p(math.exp(-d)) if name == "ranknet" else max(0.0, 1 - d) ** 2)
            if terms:
                per_query.append(sum(terms))
        elif name == "listnet" and n >= 2:
            t = np.exp(yq) / np.exp(yq).sum()
            p = np.exp(sq) / np.exp(sq).sum()
            per_query.append(-(t * np.log(p)).sum())
        elif name == "listmle" and n >= 2:
            perm = s[q][order[q][:n]]
            per_query.append(sum(math.log(np.exp(perm[k:]).sum()) - perm[k] for k in range(n)))
    return float(np.mean(per_query)) if per_query else 0.0


# --------------------------------------------------------------------------- tests

@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("seed", [0, 1])
def test_gradient_matches_finite_differences(name, seed):
    s, y, mask = make_batch(seed)
    fn = get_loss(name)
    value, grad = fn(s, y, mask)
    numeric = finite_difference(lambda x: fn(x, y, mask)[0], s)
    assert np.abs(grad).max() > 0
    assert relative_error(grad, numeric) < 1e-5
    assert np.all(grad[~mask] == 0)


@pytest.mark.parametrize("name", BASELINE)
def test_value_matches_naive_per_query_loop(name):
    s, y, mask = make_batch(2)
    value, _ = get_loss(name)(s, y, mask)
    assert isinstance(value, float)
    assert value == pytest.approx(reference_value(name, s, y, mask), rel=1e-10)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_padding_content_changes_nothing(name):
    s, y, mask = make_batch(3)
    fn = get_loss(name)
    value, grad = fn(s, y, mask)
    s2, y2 = s.copy(), y.copy()
    rng = np.random.default_rng(0)
    s2[~mask] = rng.choice([np.nan, np.inf, -np.inf, 1e6, -7.0], size=(~mask).sum())
    y2[~mask] = rng.integers(0, 5, (~mask).sum())
    value2, grad2 = fn(s2, y2, mask)
    assert value2 == value
    np.testing.assert_array_equal(grad2, grad)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_extra_padding_columns_change_nothing(name):
    s, y, mask = make_batch(4)
    wide = lambda a, fill: np.concatenate([a, np.full((a.shape[0], 5), fill)], axis=1)
    value, grad = get_loss(name)(s, y, mask)
    value2, grad2 = get_loss(name)(wide(s, 9.0), wide(y, 3.0), wide(mask, False))
    assert value2 == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(grad2[:, : s.shape[1]], grad, rtol=1e-12, atol=1e-15)
    assert np.all(grad2[:, s.shape[1]:] == 0)


@pytest.mark.parametrize("name", BASELINE)
def test_queries_without_terms_are_ignored(name):
    """Adding single-document queries (and, for pairwise losses, all-equal queries) must
    not change the mean: they have no terms."""
    s, y, mask = make_batch(5)
    value, _ = get_loss(name)(s, y, mask)
    extra_s = np.zeros((2, s.shape[1]))
    extra_m = np.zeros((2, s.shape[1]), dtype=bool)
    extra_m[:, 0] = True
    extra_y = np.zeros_like(extra_s)
    extra_y[:, 0] = 1.0 if name != "pointwise_mse" else 0.0
    if name == "pointwise_mse":
        extra_s[:, 0] = 0.0  # zero-error single docs: pointwise counts them (one term each)
    value2, grad2 = get_loss(name)(np.vstack([s, extra_s]), np.vstack([y, extra_y]), np.vstack([mask, extra_m]))
    if name == "pointwise_mse":
        n_queries = mask.any(axis=1).sum()
        assert value2 == pytest.approx(value * n_queries / (n_queries + 2), rel=1e-12)
    else:
        assert value2 == pytest.approx(value, rel=1e-12)
        assert np.all(grad2[-2:] == 0)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_no_terms_at_all_gives_zero(name):
    mask = np.zeros((3, 4), dtype=bool)
    mask[:, 0] = True
    s = np.ones((3, 4))
    y = np.ones((3, 4))
    value, grad = get_loss(name)(s, y, mask)
    if name == "pointwise_mse":  # single docs are terms here, all with zero error
        assert value == 0.0
    else:
        assert value == 0.0 and np.all(grad == 0)


def squared_hinge_over_pairs(s, y, mask):
    """RankSVM's loss the direct way, visiting every pair in blocks (as ranknet does)."""
    s, y, mask = clean(s, y, mask)

    def squared_hinge(d):
        h = np.maximum(0.0, 1.0 - d)
        return h * h, -2.0 * h

    active, block_terms = preference_pairs(y, mask, squared_hinge)
    return pair_term_sum(s, mask, active, block_terms)


@pytest.mark.parametrize("seed", range(6))
def test_ranksvm_sorted_sweep_equals_the_sum_over_pairs(seed):
    """Long and short queries, graded and real-valued labels, tied scores (hinges at exactly
    0 and 1), margins straddling 1, padding."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 60, 9)
    lengths[0] = 400
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    raw = rng.normal(size=offsets[-1]) * [0.2, 1.0, 4.0][seed % 3]
    if seed % 2:
        raw = np.round(raw, 1)  # many ties, and differences of exactly 1
    s, mask = pad(raw, offsets)
    labels = rng.integers(0, 5, offsets[-1]).astype(float) if seed < 4 else rng.normal(size=offsets[-1])
    y, _ = pad(labels, offsets)
    value, grad = ranksvm(s, y, mask)
    expected_value, expected_grad = squared_hinge_over_pairs(s, y, mask)
    assert value == pytest.approx(expected_value, rel=1e-11)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-9, atol=1e-12)
    assert np.all(grad[~mask] == 0)


@pytest.mark.parametrize("direct_max", [0, 10**9])
def test_ranksvm_pair_visits_and_sorted_sweeps_each_equal_the_sum_over_pairs(direct_max):
    """Each of the kernel's two ways alone: every query swept (0), or every query's pairs visited."""
    from rankstudy.losses.squared_hinge_numba import squared_hinge_sums

    rng = np.random.default_rng(11)
    offsets = np.concatenate([[0], np.cumsum([1, 2, 5, 33, 120, 0, 8])])
    s, mask = pad(np.round(rng.normal(size=offsets[-1]), 1), offsets)
    y, _ = pad(rng.integers(0, 4, offsets[-1]).astype(float), offsets)
    grad = np.zeros(s.shape)
    totals, active = squared_hinge_sums(s, y, mask, grad, direct_max)
    weights = query_weights(active)
    expected_value, expected_grad = squared_hinge_over_pairs(s, y, mask)
    assert totals @ weights == pytest.approx(expected_value, rel=1e-11)
    np.testing.assert_allclose(grad * weights[:, None], expected_grad, rtol=1e-9, atol=1e-12)
    two_levels = [len(set(y[q, mask[q]])) >= 2 for q in range(len(y))]
    assert list(active) == two_levels and not all(two_levels)


def test_ranksvm_sweep_matches_the_loop_definition():
    s, y, mask = make_batch(3)
    assert ranksvm(s, y, mask)[0] == pytest.approx(reference_value("ranksvm", s, y, mask), rel=1e-12)


def test_pairwise_chunking_does_not_change_result():
    """One long query among short ones: tiny blocks (one query per chunk) vs default."""
    fn = ranknet
    rng = np.random.default_rng(6)
    lengths = np.array([300, 3, 12, 1, 40, 7])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    s, mask = pad(rng.normal(size=offsets[-1]), offsets)
    y, _ = pad(rng.integers(0, 5, offsets[-1]).astype(float), offsets)
    value, grad = fn(s, y, mask)
    value_small, grad_small = fn(s, y, mask, block_elements=1)
    value_mid, grad_mid = fn(s, y, mask, block_elements=5000)
    assert value_small == pytest.approx(value, rel=1e-12)
    assert value_mid == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(grad_small, grad, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(grad_mid, grad, rtol=1e-10, atol=1e-15)
    assert value == pytest.approx(reference_value(fn.__name__, s, y, mask), rel=1e-10)


def test_plackett_luce_order_sorts_by_label_and_keeps_padding_last():
    s, y, mask = make_batch(7)
    order = plackett_luce_order(y, mask, seed=3)
    for q in range(y.shape[0]):
        n = mask[q].sum()
        assert set(order[q][:n]) == set(np.flatnonzero(mask[q]))
        assert np.all(np.diff(y[q][order[q][:n]]) <= 0)


def test_listmle_tie_break_is_reproducible_and_seeded():
    s, y, mask = make_batch(8)
    v1, g1 = listmle(s, y, mask, seed=11)
    v2, g2 = listmle(s, y, mask, seed=11)
    assert v1 == v2 and np.array_equal(g1, g2)
    orders = {plackett_luce_order(y, mask, seed).tobytes() for seed in range(10)}
    values = {listmle(s, y, mask, seed=seed)[0] for seed in range(10)}
    assert len(orders) > 1 and len(values) > 1  # ties really are broken differently per seed
    # the tie-break of a query does not depend on the padded width
    wide_y = np.concatenate([y, np.zeros((y.shape[0], 4))], axis=1)
    wide_m = np.concatenate([mask, np.zeros((y.shape[0], 4), dtype=bool)], axis=1)
    wide_order, order = plackett_luce_order(wide_y, wide_m, 11), plackett_luce_order(y, mask, 11)
    for q, n in enumerate(mask.sum(axis=1)):  # real documents only: padding order is irrelevant
        np.testing.assert_array_equal(wide_order[q, :n], order[q, :n])


@pytest.mark.parametrize("seed", [0, 7])
def test_listmle_tie_order_comes_from_the_query_alone(seed):
    """The same query at rows 0, 1 and 2 of a batch (issue 39: 3.34 / 3.17 / 3.07, its order hashed
    the row): one loss, one gradient, one order of its tied labels, whatever the other queries."""
    rng = np.random.default_rng(seed)
    y_query = np.array([2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    s_query = rng.normal(size=10)
    results, orders = [], []
    for row in range(3):
        s, y = rng.normal(size=(3, 12)), rng.integers(0, 3, (3, 12)).astype(float)  # other queries, tied too
        mask = np.ones((3, 12), dtype=bool)
        s[row, :10], y[row, :10], mask[row, 10:] = s_query, y_query, False
        orders.append(plackett_luce_order(y, mask, seed)[row, :10])
        alone = np.zeros((3, 12), dtype=bool)  # the other queries' one document each: no ListMLE term
        alone[:, 0], alone[row, :10] = True, True
        value, grad = listmle(s, y, alone, seed=seed)
        results.append((value, grad[row, :10]))
        numeric = finite_difference(lambda x: listmle(x, y, alone, seed=seed)[0], s)
        assert relative_error(grad, numeric) < 1e-5
    assert all(np.array_equal(order, orders[0]) for order in orders)
    assert all(value == results[0][0] and np.array_equal(grad, results[0][1]) for value, grad in results)
    # ties really are broken (the order is not the file's for every seed), and seeded
    assert len({plackett_luce_order(y_query[None], np.ones((1, 10), bool), k).tobytes() for k in range(10)}) > 1


def test_listmle_without_ties_does_not_depend_on_seed():
    y = np.array([[3.0, 1.0, 2.0, 0.0]])
    s = np.array([[0.3, -0.2, 1.0, 0.5]])
    mask = np.ones_like(s, dtype=bool)
    assert listmle(s, y, mask, seed=0)[0] == listmle(s, y, mask, seed=99)[0]


def test_listmle_is_stable_for_far_apart_scores():
    # a max-shifted cumsum of exp would underflow to log(0) on the suffix [-1000, -1001]
    s = np.array([[0.0, -1000.0, -1001.0, 0.0]])
    y = np.array([[2.0, 1.0, 0.0, 0.0]])
    mask = np.array([[True, True, True, False]])
    value, grad = listmle(s, y, mask)
    assert value == pytest.approx(math.log1p(math.exp(-1.0)), rel=1e-12)
    assert np.all(np.isfinite(grad))
    sig = 1 / (1 + math.exp(-1.0))  # softmax weight of -1000 within {-1000, -1001}
    np.testing.assert_allclose(grad[0, :3], [0.0, sig - 1, 1 - sig], atol=1e-12)


def test_pairwise_losses_are_stable_for_large_margins():
    s = np.array([[-800.0, 800.0]])
    y = np.array([[1.0, 0.0]])
    mask = np.ones_like(s, dtype=bool)
    value, grad = ranknet(s, y, mask)
    assert value == pytest.approx(1600.0)
    np.testing.assert_allclose(grad, [[-1.0, 1.0]])


def test_unknown_loss_lists_valid_names():
    with pytest.raises(ValueError) as err:
        get_loss("lambda_loss")
    for name in LOSSES:
        assert name in str(err.value)
