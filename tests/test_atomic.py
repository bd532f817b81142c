"""Atomic writes: all or nothing, and the file mode a plain open() would give."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from rankstudy.data.rankdata import RankData
from rankstudy.util import atomic


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_written_files_follow_the_umask(tmp_path, umask, mask):
    umask(mask)
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    written = [atomic.write_text(tmp_path / "a.txt", "x"), atomic.write_json(tmp_path / "b.json", {"a": 1})]
    data = RankData(X=np.zeros((2, 1)), y=np.zeros(2), qid=[1, 1], docid=["a", "b"], offsets=[0, 2])
    data.to_npz(tmp_path / "c.npz")
    written.append(tmp_path / "c.npz")
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~mask, path


def test_a_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "out.json"
    with pytest.raises(TypeError):
        atomic.write_json(target, {"bad": object()})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sep,header", [(",", True), ("\t", True), (" ", False)])
def test_columns_are_written_as_pandas_writes_them(tmp_path, sep, header):
    """The job scripts write their tables without pandas; the files must stay what pandas wrote
    (readers use pandas): floats at full precision, NaN empty, ints as ints, awkward text quoted."""
    import pandas as pd

    columns = {"qid": np.array([3, 3, 10, 11], dtype=np.int64),
               "doc": np.array(["a", 'say "x"', "b,c d", "e\tf"]),
               "label": np.array([2.0, 0.5, 1.0, 0.0]),
               "score": np.array([0.1, np.nan, -1e-300, 1 / 3])}
    ours = atomic.write_columns(columns, tmp_path / "ours.txt", sep=sep, header=header)
    pd.DataFrame(columns).to_csv(tmp_path / "pandas.txt", sep=sep, header=header, index=False, float_format="%.17g")
    assert ours.read_text() == (tmp_path / "pandas.txt").read_text()


def test_columns_without_rows_are_a_header_alone():
    assert atomic.format_columns({"qid": np.zeros(0, dtype=np.int64), "map": np.zeros(0)}) == "qid,map\n"
