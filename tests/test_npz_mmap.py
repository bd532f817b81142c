"""Split caches are read with their features memory-mapped: the same values, read-only, backed by
the file (so jobs share pages), and a plain read wherever a member cannot be mapped."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from rankstudy.data.npz_mmap import load_npz
from rankstudy.data.rankdata import RankData


def backing_mmap(a: np.ndarray):
    while a is not None and not isinstance(a, mmap.mmap):
        a = a.base
    return a


@pytest.fixture
def arrays():
    rng = np.random.default_rng(0)
    return {"X": rng.random((300, 7)), "F": np.asfortranarray(rng.random((5, 3))), "y": rng.integers(0, 5, 300),
            "s": np.array(["a", "bb"]), "empty": np.zeros((0, 3)), "big": rng.random((70000, 40)).astype(np.float32)}


def test_mapped_members_equal_the_saved_arrays_and_are_read_only_views_of_the_file(tmp_path, arrays):
    path = tmp_path / "a.npz"
    np.savez(path, **arrays)
    loaded = load_npz(path, mmap=tuple(arrays))
    assert set(loaded) == set(arrays)
    for name, a in arrays.items():
        np.testing.assert_array_equal(loaded[name], a)
        assert loaded[name].dtype == a.dtype and loaded[name].shape == a.shape
    for name in ("X", "F", "y", "s", "big"):
        assert backing_mmap(loaded[name]) is not None, name
        assert not loaded[name].flags.writeable
    assert loaded["F"].flags.f_contiguous
    # not asked for: read as usual
    assert backing_mmap(load_npz(path, mmap=("X",))["y"]) is None


def test_compressed_members_are_read_not_mapped(tmp_path, arrays):
    path = tmp_path / "c.npz"
    np.savez_compressed(path, **arrays)
    loaded = load_npz(path, mmap=("X",))
    np.testing.assert_array_equal(loaded["X"], arrays["X"])
    assert backing_mmap(loaded["X"]) is None


def test_split_cache_features_are_mapped_and_float32_is_kept(tmp_path):
    rng = np.random.default_rng(1)
    offsets = np.array([0, 4, 10])
    for dtype in (np.float64, np.float32):
        data = RankData(X=rng.random((10, 3)).astype(dtype), y=rng.integers(0, 3, 10).astype(float),
                        qid=np.repeat([1, 2], [4, 6]), docid=np.arange(10).astype(str), offsets=offsets)
        path = tmp_path / f"{np.dtype(dtype).name}.npz"
        data.to_npz(path)
        loaded = RankData.from_npz(path)
        assert loaded.X.dtype == dtype and backing_mmap(loaded.X) is not None
        np.testing.assert_array_equal(loaded.X, data.X)
        with pytest.raises(ValueError, match="read-only"):
            loaded.X[0, 0] = 1.0
    # other dtypes still become float64
    assert RankData(X=np.ones((10, 3), dtype=np.int32), y=np.zeros(10), qid=np.repeat([1, 2], [4, 6]),
                    docid=np.arange(10).astype(str), offsets=offsets).X.dtype == np.float64
