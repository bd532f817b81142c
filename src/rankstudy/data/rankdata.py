"""One split of a LETOR-style data set in memory (dense features, graded labels), and its
binary cache."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rankstudy.data.blocks import QueryBlocks
from rankstudy.data.npz_mmap import load_npz
from rankstudy.util.atomic import atomic_path

# a document is relevant when its label is at least this (LETOR's grades: 1, "partially relevant",
# and above), unless a config or a call says otherwise: the one default of every rel_threshold
REL_THRESHOLD = 1.0


@dataclass
class RankData(QueryBlocks):
    X: np.ndarray  # (n, m) float64 features (float32 when stored so: features.dtype)
    y: np.ndarray  # (n,) float64 graded relevance labels
    qid: np.ndarray  # (n,) int64 query id of each row (constant within a query block)
    docid: np.ndarray  # (n,) str document id (from the '#docid = ...' comment, else row index in query)
    offsets: np.ndarray  # (n_queries + 1,) int64 query boundaries

    kind: ClassVar[str] = "letor"

    def __post_init__(self) -> None:
        # float32 is kept as stored (half the memory and bandwidth), anything else made float64
        dtype = np.float32 if np.asarray(self.X).dtype == np.float32 else np.float64
        self.X = np.ascontiguousarray(self.X, dtype=dtype)
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

    @property
    def feature_shape(self) -> tuple[int, ...]:
        return (self.X.shape[1],)

    @staticmethod
    def describe_features(shape: tuple[int, ...]) -> str:
        return f"{shape[0]} features"

    def feature_arrays(self) -> list[np.ndarray]:
        """The arrays that hold the features (for a data fingerprint)."""
        return [self.X]

    @classmethod
    def concat(cls, parts: list["RankData"]) -> "RankData":
        """Stack query-grouped parts into one RankData (queries keep their order); one part is
        returned as it is."""
        if len(parts) == 1:
            return parts[0]
        lengths = np.concatenate([p.query_lengths for p in parts])
        return cls(
            X=np.vstack([p.X for p in parts]), y=np.concatenate([p.y for p in parts]),
            qid=np.concatenate([p.qid for p in parts]), docid=np.concatenate([p.docid for p in parts]),
            offsets=np.concatenate([[0], np.cumsum(lengths)]),
        )

    def select_queries(self, keep: np.ndarray) -> "RankData":
        """A RankData holding only the query blocks where ``keep`` (bool, per query) is true;
        this one itself when every query is kept (no copy of a large split for nothing)."""
        if np.all(keep):
            return self
        rows, offsets = self.query_rows(keep)
        return RankData(X=self.X[rows], y=self.y[rows], qid=self.qid[rows], docid=self.docid[rows],
                        offsets=offsets)

    def query_range(self, first: int, stop: int) -> "RankData":
        """Queries first..stop-1 as views of this split's rows (no copy)."""
        rows = slice(int(self.offsets[first]), int(self.offsets[stop]))
        return RankData(X=self.X[rows], y=self.y[rows], qid=self.qid[rows], docid=self.docid[rows],
                        offsets=self.offsets[first:stop + 1] - self.offsets[first])

    def with_features(self, X: np.ndarray) -> "RankData":
        return RankData(X=X, y=self.y, qid=self.qid, docid=self.docid, offsets=self.offsets)

    def to_npz(self, path: str | os.PathLike) -> None:
        """Write atomically (temp file + rename) so a crash never leaves a half-written cache."""
        with atomic_path(path, suffix=".npz") as tmp:
            np.savez(tmp, kind=np.array(self.kind), X=self.X, y=self.y, qid=self.qid, docid=self.docid,
                     offsets=self.offsets)

    @classmethod
    def from_npz(cls, path: str | os.PathLike) -> "RankData":
        """The features are a read-only memory map of the file (shared by every job reading it)."""
        z = load_npz(path, mmap=("X",))
        return cls(X=z["X"], y=z["y"], qid=z["qid"], docid=z["docid"], offsets=z["offsets"])
