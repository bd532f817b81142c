"""The in-memory form of one split of a ranking data set, and its binary cache.

Rows are grouped by query: the documents of query ``q`` are the contiguous rows
``offsets[q]:offsets[q+1]``. Everything downstream (features, losses, metrics)
works on this layout, either as flat arrays with segment boundaries or as padded
``(n_queries, max_len)`` arrays built by :func:`pad`.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np


class QueryBlocks:
    """Query-block bookkeeping shared by every split type: rows grouped by query, ``offsets``
    the query boundaries, ``qid`` the query id of each row."""

    offsets: np.ndarray
    qid: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.offsets) - 1

    @property
    def query_lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def query_ids(self) -> np.ndarray:
        """One qid per query block."""
        return self.qid[self.offsets[:-1]]

    def query_rows(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For a per-query bool ``keep``: the per-row mask and the new offsets."""
        keep = np.asarray(keep, dtype=bool)
        return np.repeat(keep, self.query_lengths), np.concatenate([[0], np.cumsum(self.query_lengths[keep])])


@dataclass
class RankData(QueryBlocks):
    X: np.ndarray  # (n, m) float64 features
    y: np.ndarray  # (n,) float64 graded relevance labels
    qid: np.ndarray  # (n,) int64 query id of each row (constant within a query block)
    docid: np.ndarray  # (n,) str document id (from the '#docid = ...' comment, else row index in query)
    offsets: np.ndarray  # (n_queries + 1,) int64 query boundaries

    def __post_init__(self) -> None:
        self.X = np.ascontiguousarray(self.X, dtype=np.float64)
        self.y = np.asarray(self.y, dtype=np.float64)
        self.qid = np.asarray(self.qid, dtype=np.int64)
        self.docid = np.asarray(self.docid).astype(str)
        self.offsets = np.asarray(self.offsets, dtype=np.int64)
        n = self.X.shape[0]
        if not (len(self.y) == len(self.qid) == len(self.docid) == n):
            raise ValueError("RankData: X, y, qid and docid must have the same number of rows")
        if self.offsets[0] != 0 or self.offsets[-1] != n or np.any(np.diff(self.offsets) <= 0):
            raise ValueError("RankData: offsets must start at 0, end at n and be strictly increasing")

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    def select_queries(self, keep: np.ndarray) -> "RankData":
        """A new RankData holding only the query blocks where ``keep`` (bool, per query) is true."""
        rows, offsets = self.query_rows(keep)
        return RankData(X=self.X[rows], y=self.y[rows], qid=self.qid[rows], docid=self.docid[rows],
                        offsets=offsets)

    def with_features(self, X: np.ndarray) -> "RankData":
        return RankData(X=X, y=self.y, qid=self.qid, docid=self.docid, offsets=self.offsets)


def offsets_from_qid(qid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group rows by query, keeping the order in which queries first appear.

    Returns (order, offsets): ``order`` is a stable permutation that makes each
    query's rows contiguous (non-contiguous queries in a file are merged).
    """
    qid = np.asarray(qid)
    _, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
    # rank of each query by first appearance, so output order follows the file
    appearance = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    key = appearance[inverse]
    order = np.argsort(key, kind="stable")
    counts = np.bincount(key, minlength=len(first))
    return order, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def segment_ids(offsets: np.ndarray) -> np.ndarray:
    """Query index (0..Q-1) of each row."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def positions(offsets: np.ndarray) -> np.ndarray:
    """Position of each row within its query (0-based)."""
    n = int(offsets[-1])
    return np.arange(n) - np.repeat(offsets[:-1], np.diff(offsets))


def pad(values: np.ndarray, offsets: np.ndarray, fill: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Flat per-row values -> (padded (Q, L) array, bool mask of real entries)."""
    values = np.asarray(values)
    lengths = np.diff(offsets)
    Q, L = len(lengths), int(lengths.max()) if len(lengths) else 0
    out = np.full((Q, L), fill, dtype=values.dtype if values.dtype.kind == "f" else np.float64)
    mask = np.zeros((Q, L), dtype=bool)
    rows, cols = segment_ids(offsets), positions(offsets)
    out[rows, cols] = values
    mask[rows, cols] = True
    return out, mask


def padded_layout(offsets: np.ndarray, labels: np.ndarray):
    """What an objective needs once per fit to pad scores on every call: the padded shape
    (Q, L), the flat index of each row in it, the mask, and the padded labels."""
    lengths = np.diff(offsets)
    shape = (len(lengths), int(lengths.max()))
    flat = segment_ids(offsets) * shape[1] + positions(offsets)
    mask = np.zeros(shape, dtype=bool)
    mask.flat[flat] = True
    padded_labels = np.zeros(shape)
    padded_labels.flat[flat] = labels
    return shape, flat, mask, padded_labels


def unpad(padded: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pad`: padded (Q, L) -> flat per-row values."""
    return padded[segment_ids(offsets), positions(offsets)]


def save_npz(data: RankData, path: str | os.PathLike) -> None:
    """Write atomically (temp file + rename) so a crash never leaves a half-written cache."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp.npz")
    os.close(fd)
    try:
        np.savez(tmp, X=data.X, y=data.y, qid=data.qid, docid=data.docid, offsets=data.offsets)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_npz(path: str | os.PathLike) -> RankData:
    with np.load(path, allow_pickle=False) as z:
        return RankData(X=z["X"], y=z["y"], qid=z["qid"], docid=z["docid"], offsets=z["offsets"])


def load_split(path: str | os.PathLike):
    """A cached split of either kind: LETOR-style RankData or question-answer QAData."""
    with np.load(path, allow_pickle=False) as z:
        is_qa = "format" in z.files
    if is_qa:
        from rankstudy.qa import QAData  # qa builds on this module

        return QAData.from_npz(path)
    return load_npz(path)


def save_split(data, path: str | os.PathLike) -> None:
    if hasattr(data, "to_npz"):
        data.to_npz(path)
    else:
        save_npz(data, path)
