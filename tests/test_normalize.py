"""Normalizer: train-only statistics, constant features, per-query min-max."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankstudy.data.rankdata import RankData
from rankstudy.features.normalize import NORMALIZERS, Normalizer, UnrepresentableValue


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


# --------------------------------------------------------------------------- values it cannot represent
# (issue 39: features of +-1.7e308 parse, and normalisation wrote NaN into the cache, so every rerun
# failed the same way)

def _huge(value: float, kind: str) -> RankData:
    """A tiny split, feature 2 of query 2's second document set to ``value``."""
    X = np.array([[0.1, 0.2, 1.0], [0.3, 0.4, 2.0], [0.5, -1.7e308 if kind == "querylevel" else 0.6, 3.0],
                  [0.7, value, 4.0]])
    return _data(X, [2, 2])


@pytest.mark.parametrize("kind", ["zscore", "querylevel"])
def test_a_value_normalisation_cannot_represent_is_refused_naming_split_feature_and_value(kind):
    train = _huge(1.7e308, kind)
    with pytest.raises(UnrepresentableValue) as err:
        Normalizer(kind).fit_transform(train, "results/features/x/fold1/train.npz (split train)")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("results/features/x/fold1/train.npz (split train): feature 2 (query 2) has the "
                              f"value {1.7e308 if kind == 'zscore' else -1.7e308!r}, ")


def test_a_held_out_value_whose_zscore_overflows_is_refused():
    train_vali = _data(np.array([[0.0, 1.0], [0.1, 1.2], [0.2, 1.1]]), [3])  # spread 0.08: scale 12
    test = _data(np.array([[0.1, 1.0], [1.7e308, 1.0]]), [2])
    norm = Normalizer("zscore").fit(train_vali)
    with pytest.raises(UnrepresentableValue, match=r"^test: feature 1 \(query 1\) has the value 1.7e\+308, whose "
                                                   r"zscore .* overflows float64"):
        norm.transform(test, "test")


def test_large_values_normalisation_can_represent_are_kept():
    data = _data(np.array([[1e300, 0.0], [-1e300, 1e150], [0.0, -1e150]]), [3])
    np.testing.assert_array_equal(Normalizer("querylevel").fit_transform(data).X[:, 0], [1.0, 0.0, 0.5])
    out = Normalizer("zscore").fit_transform(data.with_features(data.X[:, 1:]))
    assert np.isfinite(out.X).all() and out.X[1, 0] > 0


def test_a_value_the_features_dtype_cannot_hold_is_refused():
    data = _data(np.array([[0.5], [1e39]]), [2])
    norm = Normalizer("none").fit(data)
    with pytest.raises(UnrepresentableValue, match=r"^vali: feature 1 \(query 1\) has the value 1e\+39, after none "
                                                   r"normalisation, which float32 \(features.dtype\) cannot hold"):
        norm.cast(norm.transform(data), "float32", "vali")
    assert norm.cast(_data(np.array([[0.5], [1e38]]), [2]), "float32").X.dtype == np.float32


def test_the_featurize_job_refuses_it_in_one_line_and_writes_no_output(tmp_path, monkeypatch, capsys):
    """Through the job script, as Snakemake runs it: one line naming the split file, no cache written."""
    import runpy
    import sys
    from pathlib import Path

    from rankstudy.data.kinds import save_split
    from rankstudy.features.featuresets import FeatureSet
    from rankstudy.pipeline.stepjob import Named

    monkeypatch.chdir(tmp_path)
    inputs = {s: f"cleaned/{s}.npz" for s in ("train", "vali", "test")}
    for s, path in inputs.items():
        Path(path).parent.mkdir(exist_ok=True)
        save_split(_huge(1.7e308 if s == "train" else 0.5, "zscore"), path)
    outputs = {s: f"features/{s}.npz" for s in inputs} | {"pairs": "features/pairs.tsv",
                                                           "transform": "features/transform.json"}
    job = Named(wildcards=Named(data="Toy", fold="1"), threads=1, log=["logs/featurize.log"], config={},
                input=Named({**inputs, "correlations": []}), output=Named(outputs),
                params=Named(normalization="zscore", featureset=FeatureSet("first").to_dict(), dtype="float64"))
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # job_logging swaps the streams; put pytest's back after
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(SystemExit):
        runpy.run_path(str(Path(__file__).resolve().parents[1] / "workflow/scripts/featurize.py"),
                       init_globals={"snakemake": job})
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rankstudy featurize: cleaned/train.npz (split train): feature 2 "
                                                   "(query 2) has the value 1.7e+308, ")
    assert not Path("features").exists() or not any(Path("features").iterdir())
