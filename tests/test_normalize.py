"""Normalizer: train-only statistics, constant features, per-query min-max."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankstudy.data.rankdata import RankData
from rankstudy.features.normalize import NORMALIZERS, Normalizer


def _data(X: np.ndarray, lengths: list[int]) -> RankData:
    n = X.shape[0]
    assert sum(lengths) == n
    qid = np.repeat(np.arange(len(lengths)) + 1, lengths)
    return RankData(X=X, y=np.zeros(n), qid=qid, docid=np.arange(n).astype(str),
                    offsets=np.concatenate([[0], np.cumsum(lengths)]))


@pytest.fixture
def train_vali() -> tuple[RankData, RankData]:
    rng = np.random.default_rng(1)
    Xt = rng.normal([5.0, -2.0, 1e6, 0.0, 7.0], [2.0, 0.5, 1e-2, 1.0, 1.0], size=(40, 5))
    Xt[:, 3] = 0.0  # all-zero feature
    Xt[:, 4] = 7.0  # constant feature
    Xv = rng.normal([9.0, 0.0, 1e6, 1.0, 3.0], 3.0, size=(15, 5))  # shifted: its own stats differ
    return _data(Xt, [10, 20, 10]), _data(Xv, [5, 10])


def test_zscore_uses_train_statistics_only(train_vali):
    train, vali = train_vali
    norm = Normalizer("zscore").fit(train)
    t = norm.transform(train).X
    np.testing.assert_allclose(t[:, :2].mean(axis=0), 0.0, atol=1e-9)
    # column 2 sits at 1e6 with spread 1e-2: the mean itself is only representable to
    # ulp(1e6)/2 ~ 6e-11, i.e. ~6e-9 in standardised units
    assert abs(t[:, 2].mean()) < 1e-7
    np.testing.assert_allclose(t[:, :3].std(axis=0), 1.0, rtol=1e-9)
    mu, sd = train.X[:, :3].mean(axis=0), train.X[:, :3].std(axis=0)
    v = norm.transform(vali).X
    np.testing.assert_allclose(v[:, :3], (vali.X[:, :3] - mu) / sd, rtol=1e-9, atol=1e-9)
    # vali was shifted, so train statistics must leave it off-centre
    assert abs(v[:, 0].mean()) > 1.0


def test_zscore_constant_and_zero_features_map_to_zero(train_vali):
    train, vali = train_vali
    norm = Normalizer("zscore").fit(train)
    for d in (train, vali):
        out = norm.transform(d).X
        assert np.isfinite(out).all()
        np.testing.assert_array_equal(out[:, 3:], 0.0)
    assert norm.scale_[2] > 1.0  # large offset, tiny spread: not mistaken for a constant


def test_querylevel_min_max_within_each_query():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 4)) * 10
    X[:, 2] = np.repeat([3.0, -1.0, 8.0], 10)  # constant within each query
    X[10:20, 3] = 4.0                          # constant in query 2 only
    d = _data(X, [10, 10, 10])
    out = Normalizer("querylevel").fit(d).transform(d).X
    for s, e in zip(d.offsets[:-1], d.offsets[1:]):
        block = X[s:e]
        span = block.max(axis=0) - block.min(axis=0)
        want = np.where(span > 0, (block - block.min(axis=0)) / np.where(span > 0, span, 1), 0.0)
        np.testing.assert_allclose(out[s:e], want, atol=1e-12)
    np.testing.assert_array_equal(out[:, 2], 0.0)
    np.testing.assert_array_equal(out[10:20, 3], 0.0)
    assert out[:10, 3].max() == 1.0 and out[:10, 3].min() == 0.0


def test_querylevel_is_stateless_and_none_is_identity(train_vali):
    train, vali = train_vali
    a = Normalizer("querylevel").fit(train).transform(vali).X
    b = Normalizer("querylevel").fit(vali).transform(vali).X
    np.testing.assert_array_equal(a, b)
    ident = Normalizer("none").fit(train).transform(vali)
    np.testing.assert_array_equal(ident.X, vali.X)
    assert ident.X is not vali.X
    np.testing.assert_array_equal(ident.offsets, vali.offsets)


def test_unknown_kind_lists_valid_kinds():
    with pytest.raises(ValueError) as err:
        Normalizer("minmax")
    for kind in NORMALIZERS:
        assert kind in str(err.value)


def test_zscore_needs_fit_and_matching_width(train_vali):
    train, vali = train_vali
    with pytest.raises(RuntimeError):
        Normalizer("zscore").transform(train)
    norm = Normalizer("zscore").fit(train)
    with pytest.raises(ValueError):
        norm.transform(vali.with_features(vali.X[:, :3]))


@pytest.mark.parametrize("kind", NORMALIZERS)
def test_dict_round_trip_through_json(kind, train_vali):
    train, vali = train_vali
    norm = Normalizer(kind).fit(train)
    clone = Normalizer.from_dict(json.loads(json.dumps(norm.to_dict())))
    assert clone.kind == kind
    np.testing.assert_array_equal(clone.transform(vali).X, norm.transform(vali).X)
