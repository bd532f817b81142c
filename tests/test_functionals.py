"""Quadratic functional: chunked scores and vector-Jacobian product equal the materialised
product matrix (any chunk size, repeated / reversed / diagonal pairs, feature subsets),
memory stays far below the product matrix, and bad inputs are rejected."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from rankstudy.features.pairs import check_pairs
from rankstudy.scorers.quadratic import quadratic_scores, quadratic_vjp
from rankstudy.features.pairs import pair_correlations, second_order, select_pairs


def materialised(X, pairs, w, c, g):
    """Reference: build all product columns, then score and differentiate directly."""
    P = second_order(X, pairs)
    return X @ w + P @ c, X.T @ g, P.T @ g


PAIR_SETS = {
    "all": np.column_stack(np.triu_indices(9)),
    # repeated pair, i > j, diagonal, and only a few features involved (a gathered sub-block)
    "mixed": np.array([[3, 1], [0, 0], [3, 1], [7, 2], [2, 7], [5, 5]]),
    "one": np.array([[4, 6]]),
}


@pytest.mark.parametrize("pair_set", sorted(PAIR_SETS))
@pytest.mark.parametrize("chunk_rows", [1, 7, 50, 53, 8192])
def test_chunked_equals_materialised(pair_set, chunk_rows):
    rng = np.random.default_rng(len(pair_set) + chunk_rows)
    n, m = 53, 9  # 53 is prime: no chunk size above 1 divides it
    X = rng.normal(size=(n, m)) * rng.uniform(0.5, 3.0, m) + rng.normal(size=m)
    pairs = PAIR_SETS[pair_set]
    w, c, g = rng.normal(size=m), rng.normal(size=len(pairs)), rng.normal(size=n)
    scores_ref, dw_ref, dc_ref = materialised(X, pairs, w, c, g)

    scores = quadratic_scores(X, pairs, w, c, chunk_rows=chunk_rows)
    dw, dc = quadratic_vjp(X, pairs, g, chunk_rows=chunk_rows)
    np.testing.assert_allclose(scores, scores_ref, rtol=0, atol=1e-10 * np.abs(scores_ref).max())
    np.testing.assert_allclose(dw, dw_ref, rtol=0, atol=1e-10 * np.abs(dw_ref).max())
    np.testing.assert_allclose(dc, dc_ref, rtol=0, atol=1e-10 * np.abs(dc_ref).max())


def test_vjp_is_the_gradient_of_the_weighted_score_sum():
    """Independent of second_order: finite differences of sum_n g_n f_n(w, c)."""
    rng = np.random.default_rng(5)
    X, pairs = rng.normal(size=(30, 5)), np.array([[0, 1], [2, 2], [4, 0]])
    w, c, g = rng.normal(size=5), rng.normal(size=3), rng.normal(size=30)

    def total(theta):
        return g @ quadratic_scores(X, pairs, theta[:5], theta[5:], chunk_rows=4)

    theta = np.concatenate([w, c])
    h = 1e-6
    numeric = np.array([(total(theta + h * e) - total(theta - h * e)) / (2 * h) for e in np.eye(8)])
    np.testing.assert_allclose(np.concatenate(quadratic_vjp(X, pairs, g, chunk_rows=4)), numeric, rtol=1e-7)


def test_works_with_pairs_selected_by_the_rho_filter():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 6))
    y = (X[:, 1] * X[:, 4] > 0.3).astype(float) + (X[:, 0] > 1)
    kept = select_pairs(pair_correlations(X, y), 0.15)  # a DataFrame with columns i, j, rho
    assert 0 < len(kept) < 21
    w, c = rng.normal(size=6), rng.normal(size=len(kept))
    np.testing.assert_allclose(quadratic_scores(X, kept, w, c, chunk_rows=64),
                               X @ w + second_order(X, kept) @ c, rtol=1e-12, atol=1e-12)


def test_no_pairs_is_the_linear_functional():
    rng = np.random.default_rng(3)
    X, w, g = rng.normal(size=(20, 4)), rng.normal(size=4), rng.normal(size=20)
    np.testing.assert_array_equal(quadratic_scores(X, [], w, np.zeros(0)), X @ w)
    dw, dc = quadratic_vjp(X, np.zeros((0, 2), dtype=int), g)
    np.testing.assert_array_equal(dw, X.T @ g)
    assert dc.shape == (0,)


def test_memory_stays_far_below_the_product_matrix():
    rng = np.random.default_rng(4)
    n, m = 6000, 60
    X = rng.normal(size=(n, m))
    pairs = np.column_stack(np.triu_indices(m))  # 1,830 pairs: materialised = 88 MB
    c, w, g = rng.normal(size=len(pairs)), rng.normal(size=m), rng.normal(size=n)
    tracemalloc.start()
    try:
        quadratic_scores(X, pairs, w, c, chunk_rows=1024)
        quadratic_vjp(X, pairs, g, chunk_rows=1024)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    product_matrix = n * len(pairs) * 8
    assert peak < product_matrix / 20, (peak, product_matrix)


def test_rejects_bad_inputs():
    X = np.ones((4, 3))
    with pytest.raises(ValueError, match="out of range"):
        quadratic_scores(X, [[0, 3]], np.zeros(3), np.zeros(1))
    with pytest.raises(ValueError, match="non-negative"):
        check_pairs([[-1, 0]])
    with pytest.raises(ValueError, match=r"\(k, 2\)"):
        check_pairs([[0, 1, 2]])
    with pytest.raises(ValueError, match="shape"):
        quadratic_scores(X, [[0, 1]], np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="shape"):
        quadratic_vjp(X, [[0, 1]], np.zeros(5))
    with pytest.raises(ValueError, match="chunk_rows"):
        quadratic_scores(X, [[0, 1]], np.zeros(3), np.zeros(1), chunk_rows=0)
