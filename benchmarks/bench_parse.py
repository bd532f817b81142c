"""Parse speed of ``rankstudy.data.letor.read_letor`` against scikit-learn's SVMlight loader.

Measures wall-clock time to turn an uncompressed LETOR text file into arrays,
for ``read_letor(path)`` and ``sklearn.datasets.load_svmlight_file(path,
query_id=True)`` in the same process, alternating the two and keeping the best
of ``--repeat`` runs each (best-of damps noise from other processes). Files:

* a generated dense file of ``--lines`` lines x ``--features`` features
  (MSLR-like: every line lists indices 1..m, a mix of integer and 6-digit values);
* the MQ2008 Fold1 training file (46 features, docid comments), decompressed to
  a temporary file, when the shared data directory exists.

Prints seconds, the ratio read_letor / sklearn (target: <= 1.5) and whether the
values are identical (X, y, qid after grouping queries the same way).

    PYTHONPATH=src python benchmarks/bench_parse.py [--lines N] [--features M] [--repeat R]
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

from rankstudy.data.blocks import offsets_from_qid
from rankstudy.data.letor import read_letor

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("RANKSTUDY_SHARED_DATA", REPO.parent / "shared" / "data"))


def write_dense_file(path: Path, n_lines: int, n_features: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    values = rng.random((n_lines, n_features)) * rng.choice([1, 10, 1000], size=n_features)
    integer_columns = rng.random(n_features) < 0.4
    values[:, integer_columns] = np.floor(values[:, integer_columns])
    values[rng.random(values.shape) < 0.3] = 0.0
    label = rng.integers(0, 5, n_lines)
    qid = np.arange(n_lines) // 100 + 1
    columns = np.empty((n_lines, 2 + 2 * n_features))
    columns[:, 0], columns[:, 1] = label, qid
    columns[:, 2::2] = np.arange(1, n_features + 1)
    columns[:, 3::2] = values
    row_format = "%d qid:%d " + " ".join(["%d:%.6g"] * n_features)
    np.savetxt(path, columns, fmt=row_format)


def best_times(path: Path, repeat: int):
    ours, theirs = [], []
    for _ in range(repeat):  # alternate so both see the same background load
        start = time.perf_counter()
        data = read_letor(path)
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        X, y, qid = load_svmlight_file(str(path), query_id=True)
        theirs.append(time.perf_counter() - start)
    order, _ = offsets_from_qid(qid)
    same = (np.array_equal(data.X, X.toarray()[order]) and np.array_equal(data.y, y[order])
            and np.array_equal(data.qid, qid[order]))
    return min(ours), min(theirs), same


def report(name: str, path: Path, repeat: int) -> bool:
    ours, theirs, same = best_times(path, repeat)
    size = path.stat().st_size / 1e6
    print(f"{name:<28} {size:8.1f} MB  read_letor {ours:7.3f} s  sklearn {theirs:7.3f} s  "
          f"ratio {ours / theirs:5.2f}  values equal: {same}")
    return same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        dense = Path(tmp) / "dense.txt"
        write_dense_file(dense, args.lines, args.features)
        ok &= report(f"dense {args.lines}x{args.features}", dense, args.repeat)
        mq2008 = SHARED_DATA / "MQ2008" / "Fold1" / "train.txt.gz"
        if mq2008.exists():
            plain = Path(tmp) / "mq2008_train.txt"
            with gzip.open(mq2008, "rb") as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst)
            ok &= report("MQ2008 Fold1 train", plain, args.repeat)
        else:
            print(f"MQ2008 not found under {SHARED_DATA}; skipped")
    if not ok:
        raise SystemExit("values differ from sklearn")


if __name__ == "__main__":
    main()
