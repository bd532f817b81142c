"""Second-order features: chunked Pearson rho against brute force, selection, layout."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rankstudy.data.rankdata import RankData
from rankstudy.features.pairs import (
    SecondOrderSelector,
    expand,
    pair_correlations,
    second_order,
    select_pairs,
)


def brute_force_rho(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Materialise every product and correlate with np.corrcoef (NaN for constants -> 0)."""
    ii, jj = np.triu_indices(X.shape[1])
    P = X[:, ii] * X[:, jj]
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.corrcoef(np.column_stack([P, y]), rowvar=False)[-1, :-1]
    constant = np.ptp(P, axis=0) == 0
    rho[constant] = 0.0
    return rho


def awkward_features(n: int, seed: int, graded: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Awkward columns; y continuous (sign-split path) or graded 0..4 (per-label path)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([
        rng.normal(size=n),
        rng.exponential(size=n),
        np.zeros(n),                          # all-zero: every product with it is constant
        np.full(n, 3.0),                      # constant: products with it are scaled copies
        rng.choice([-1.0, 1.0], n),           # x*x == 1 exactly: constant product
        1e5 + rng.normal(size=n),             # large offset: naive E[p^2]-E[p]^2 loses digits
        rng.integers(0, 3, n).astype(float),  # discrete with ties
        rng.normal(size=n) * 1e-3,            # tiny scale
    ])
    X = np.column_stack([X, X[:, 0] * 2.0 + 1.0])  # exactly collinear with column 0
    y = rng.integers(0, 5, n).astype(float) + 0.5 * X[:, 0] * X[:, 1]
    if graded:
        y = np.clip(np.round(y), 0, 4)
    return X, y


@pytest.mark.parametrize("graded", [False, True], ids=["continuous_y", "graded_y"])
@pytest.mark.parametrize("n,chunk_rows,seed", [(97, 1, 0), (97, 13, 1), (500, 64, 2), (500, 500, 3), (333, 65536, 4)])
def test_matches_brute_force(n, chunk_rows, seed, graded):
    X, y = awkward_features(n, seed, graded)
    assert (len(np.unique(y)) <= 5) == graded
    got = pair_correlations(X, y, chunk_rows=chunk_rows)
    m = X.shape[1]
    assert len(got) == m * (m + 1) // 2
    assert list(got.columns) == ["i", "j", "rho"]
    assert (got["i"] <= got["j"]).all()
    np.testing.assert_allclose(got["rho"].to_numpy(), brute_force_rho(X, y), rtol=0, atol=1e-9)


def test_constant_products_are_zero_not_nan():
    X, y = awkward_features(200, 5)
    got = pair_correlations(X, y, chunk_rows=37).set_index(["i", "j"])["rho"]
    assert np.isfinite(got).all()
    assert (got.loc[2] == 0).all()            # every product with the all-zero column
    assert got.loc[(4, 4)] == 0               # (+-1)^2 == 1
    assert got.loc[(2, 2)] == 0 and got.loc[(3, 3)] == 0
    assert abs(got.loc[(0, 3)]) > 0           # constant * informative is not constant
    assert got.loc[(0, 1)] > 0.3              # the planted interaction is found


def test_constant_label_gives_zero_rho():
    X, _ = awkward_features(50, 6)
    got = pair_correlations(X, np.full(50, 2.0), chunk_rows=7)
    np.testing.assert_array_equal(got["rho"].to_numpy(), 0.0)
    got = pair_correlations(X, np.full(50, 0.1), chunk_rows=7)  # 0.1 - mean(0.1s) may not be exactly 0
    np.testing.assert_array_equal(got["rho"].to_numpy(), 0.0)


def test_large_offset_beats_naive_moments():
    # features around 1e6: raw-moment formulas lose every digit here, centred ones do not
    rng = np.random.default_rng(7)
    X = 1e6 + rng.normal(size=(400, 3))
    y = X[:, 0] * X[:, 1] + rng.normal(size=400) * 1e6
    got = pair_correlations(X, y, chunk_rows=50)["rho"].to_numpy()
    np.testing.assert_allclose(got, brute_force_rho(X, y), atol=1e-9)
    assert got[1] > 0.5  # (0, 1)


def test_select_pairs_threshold_abs_and_order():
    corr = pd.DataFrame({"i": [2, 0, 1, 0, 1], "j": [3, 1, 1, 0, 2], "rho": [0.3, -0.2, 0.05, 0.1, -0.1]})
    kept = select_pairs(corr, 0.1)
    assert kept[["i", "j"]].values.tolist() == [[0, 0], [0, 1], [1, 2], [2, 3]]  # |rho| == 0.1 kept
    assert select_pairs(corr, 0.25)[["i", "j"]].values.tolist() == [[2, 3]]
    assert len(select_pairs(corr, 0.0)) == 5
    assert len(select_pairs(corr, 1.0)) == 0
    with pytest.raises(ValueError):
        select_pairs(corr, 1.5)


def _rank_data(X: np.ndarray, y: np.ndarray | None = None) -> RankData:
    n = X.shape[0]
    return RankData(X=X, y=np.arange(n) % 3 if y is None else y, qid=np.repeat([7, 9], [n // 2, n - n // 2]),
                    docid=[f"d{k}" for k in range(n)], offsets=[0, n // 2, n])


def test_second_order_and_expand_layout():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(11, 4))
    pairs = np.array([[0, 0], [1, 3], [2, 3]])
    P = second_order(X, pairs)
    np.testing.assert_array_equal(P, np.column_stack([X[:, 0] ** 2, X[:, 1] * X[:, 3], X[:, 2] * X[:, 3]]))
    d = _rank_data(X)
    e = expand(d, pairs)
    assert e.X.shape == (11, 7)
    np.testing.assert_array_equal(e.X[:, :4], X)
    np.testing.assert_array_equal(e.X[:, 4:], P)
    np.testing.assert_array_equal(e.offsets, d.offsets)
    np.testing.assert_array_equal(e.docid, d.docid)
    # DataFrame input and no pairs
    df = pd.DataFrame({"i": [1, 2], "j": [3, 3], "rho": [0.5, 0.4]})
    np.testing.assert_array_equal(second_order(X, df), P[:, 1:])
    np.testing.assert_array_equal(expand(d, np.zeros((0, 2), int)).X, X)
    with pytest.raises(ValueError):
        second_order(X, [[0, 4]])


def test_selector_fit_on_train_and_round_trip():
    X, y = awkward_features(300, 9)
    train = _rank_data(X, y)
    sel = SecondOrderSelector(threshold=0.2, chunk_rows=64).fit(train)
    want = select_pairs(pair_correlations(X, y), 0.2)[["i", "j"]].to_numpy()
    np.testing.assert_array_equal(sel.pairs_, want)
    assert len(want) > 0
    clone = SecondOrderSelector.from_dict(json.loads(json.dumps(sel.to_dict())))
    np.testing.assert_array_equal(clone.transform(train).X, sel.transform(train).X)
    assert SecondOrderSelector(None).fit(train).transform(train).X.shape == X.shape
