"""Float64 work on float32 features a chunk of rows at a time (rankstudy.util.rowchunks): the
same numbers as the whole-array forms, and no float64 copy of the split in the neural rankers,
AdaRank or the quadratic functional (peak allocations traced with tracemalloc, which numpy
reports its arrays to)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from rankstudy.data.rankdata import RankData
from rankstudy.rankers.registry import make_ranker
from rankstudy.scorers.mlp import input_statistics
from rankstudy.scorers.quadratic import quadratic_scores, quadratic_vjp
from rankstudy.util.rowchunks import chunk_rows, column_sums, matvec64, rmatvec64


@pytest.mark.parametrize("shape", [(1000, 1), (70_001, 1), (70_001, 2), (20_000, 7), (9_999, 46)])
def test_column_sums_are_the_whole_sum_bit_for_bit(shape):
    X = np.random.default_rng(1).lognormal(0, 3, shape)
    mean = X.mean(axis=0)
    assert np.array_equal(column_sums(X, lambda rows: rows, rows=1024), X.sum(axis=0))
    assert np.array_equal(column_sums(X, lambda rows: np.square(rows - mean), rows=1024) / len(X), X.var(axis=0))


def test_products_are_the_whole_ones_on_float64_and_within_rounding_on_float32():
    rng = np.random.default_rng(2)
    X = rng.lognormal(0, 2, (10_000, 13))
    w, g = rng.normal(size=13), rng.normal(size=10_000)
    assert np.array_equal(matvec64(X, w, rows=512), X @ w)
    assert np.array_equal(rmatvec64(X, g, rows=512), X.T @ g)
    X32 = X.astype(np.float32)
    assert matvec64(X32, w, rows=512).dtype == np.float64
    np.testing.assert_allclose(matvec64(X32, w, rows=512), X32.astype(np.float64) @ w, rtol=1e-12)
    np.testing.assert_allclose(rmatvec64(X32, g, rows=512), X32.astype(np.float64).T @ g, rtol=1e-12)


@pytest.mark.parametrize("transform", ["none", "log1p"])
def test_the_mlp_input_statistics_over_chunks_are_numpys(transform):
    X = np.random.default_rng(3).normal(0, 5, (20_000, 300)).astype(np.float32)
    assert chunk_rows(X) < 2_000  # eleven chunks
    seen = X.astype(np.float64)
    if transform == "log1p":
        seen = np.sign(seen) * np.log1p(np.abs(seen))
    stats = input_statistics(X, transform)
    assert stats["input_mean"] == seen.mean(axis=0).tolist()
    assert stats["input_scale"] == np.sqrt(seen.var(axis=0) + 1e-5).tolist()


def big_split(dtype, n_queries=2_000, per_query=100, n_features=50) -> RankData:
    rng = np.random.default_rng(4)
    n = n_queries * per_query
    X = rng.normal(size=(n, n_features))
    y = (X[:, 0] + rng.normal(size=n) > 1).astype(float)
    return RankData(X=X.astype(dtype), y=y, qid=np.repeat(np.arange(n_queries), per_query),
                    docid=np.arange(n).astype(str), offsets=np.arange(0, n + 1, per_query))


def peak_bytes(work) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


MLP = {"scorer": "mlp", "hidden": [8], "input_norm": "batch", "input_transform": "log1p", "epochs": 1,
       "batch_size": 64, "seed": 0}


@pytest.mark.parametrize("kind, params", [("neural", MLP), ("adarank", {"n_rounds": 3}),
                                          ("linear", {"functional": "quadratic", "pairs": [[0, 1], [2, 3]],
                                                      "max_iter": 3})])
def test_a_fit_on_float32_features_makes_no_float64_copy_of_the_split(kind, params):
    """Fit and prediction hold less than one float64 copy of the split (80 MB here) at any time;
    before the rows were cast a chunk at a time the MLP held two such copies at once."""
    data = big_split(np.float32)
    copy = data.X.size * 8
    ranker = make_ranker(kind, params)
    assert peak_bytes(lambda: ranker.fit(data)) < 0.75 * copy
    assert peak_bytes(lambda: ranker.predict(data)) < 0.75 * copy


@pytest.mark.parametrize("kind, params", [("neural", MLP), ("adarank", {"n_rounds": 5})])
def test_float32_features_fit_as_their_float64_values_do(kind, params):
    """Every cast is exact (float32 to float64), so float32 features and the same values stored as
    float64 make the same model, bit for bit (one chunk of rows here, as on the LETOR folds)."""
    small = big_split(np.float32, n_queries=200)
    as64 = small.with_features(small.X.astype(np.float64))
    a, b = make_ranker(kind, params).fit(small), make_ranker(kind, params).fit(as64)
    assert np.array_equal(a.predict(small), b.predict(as64))


def test_the_quadratic_functional_on_float32_is_within_rounding_of_its_float64_values():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(5_000, 6)).astype(np.float32)
    pairs, w, c, g = [[0, 1], [2, 5]], rng.normal(size=6), rng.normal(size=2), rng.normal(size=5_000)
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(quadratic_scores(X, pairs, w, c, chunk_rows=700),
                               quadratic_scores(X64, pairs, w, c, chunk_rows=700), rtol=1e-12)
    for ours, whole in zip(quadratic_vjp(X, pairs, g, chunk_rows=700), quadratic_vjp(X64, pairs, g, chunk_rows=700)):
        np.testing.assert_allclose(ours, whole, rtol=1e-12)
