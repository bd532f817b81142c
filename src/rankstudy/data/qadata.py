"""Question-answer data in the separate representation of Tran et al. (2011, Sec. 2).

Each question q has a bag-of-words vector y_q and each of its answers o a vector
z_o, from two different vocabularies; exactly one answer per question is the best
one (label 1, the others 0), as in the paper's Yahoo! Answers data (Sec. 4).

:class:`QAData` is one split: question vectors (one row per question), answer vectors
(one row per answer, grouped by question as in :class:`rankstudy.data.rankdata.RankData`),
labels and ids; a one-file ``.npz`` cache. Its sources are the embedded generator
(:mod:`rankstudy.data.synthetic_qa`) and a user's own table (:mod:`rankstudy.data.qa_table`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from rankstudy.data.blocks import QueryBlocks
from rankstudy.util.atomic import atomic_path

NPZ_FORMAT = "rankstudy.qa"
_SPARSE_KEYS = ("data", "indices", "indptr", "shape")


class QATableError(ValueError):
    """Malformed question-answer table (:mod:`rankstudy.data.qa_table`); the message names ``path:line``."""


def _as_csr(matrix, name: str) -> sp.csr_matrix:
    out = sp.csr_matrix(matrix, dtype=np.float64)
    out.sum_duplicates()  # canonical form: equal matrices compare and save identically
    if not np.all(np.isfinite(out.data)):
        raise ValueError(f"QAData: {name} holds NaN or infinite values")
    return out


@dataclass
class QAData(QueryBlocks):
    query_vectors: sp.csr_matrix  # (n_queries, k1) one row per question
    object_vectors: sp.csr_matrix  # (n_docs, k2) one row per answer, grouped by question
    y: np.ndarray  # (n_docs,) 1.0 for the best answer, else 0.0
    qid: np.ndarray  # (n_docs,) int64 question id of each answer (constant within a block)
    docid: np.ndarray  # (n_docs,) str answer id
    offsets: np.ndarray  # (n_queries + 1,) int64 question boundaries

    kind: ClassVar[str] = "qa"

    def __post_init__(self) -> None:
        self.query_vectors = _as_csr(self.query_vectors, "query_vectors")
        self.object_vectors = _as_csr(self.object_vectors, "object_vectors")
        self.y = np.asarray(self.y, dtype=np.float64)
        self.qid = np.asarray(self.qid, dtype=np.int64)
        self.docid = np.asarray(self.docid).astype(str)
        self.offsets = np.asarray(self.offsets, dtype=np.int64)
        n = self.object_vectors.shape[0]
        if not (len(self.y) == len(self.qid) == len(self.docid) == n):
            raise ValueError("QAData: object_vectors, y, qid and docid must have the same number of rows")
        if self.offsets[0] != 0 or self.offsets[-1] != n or np.any(np.diff(self.offsets) <= 0):
            raise ValueError("QAData: offsets must start at 0, end at n_docs and be strictly increasing")
        if self.query_vectors.shape[0] != len(self.offsets) - 1:
            raise ValueError(f"QAData: {self.query_vectors.shape[0]} query_vectors rows for "
                             f"{len(self.offsets) - 1} questions")

    @property
    def n_docs(self) -> int:
        return len(self.y)

    @property
    def n_features(self) -> int:
        """Question plus answer vocabulary sizes."""
        return self.query_vectors.shape[1] + self.object_vectors.shape[1]

    @property
    def feature_shape(self) -> tuple[int, ...]:
        """(question vocabulary, answer vocabulary)."""
        return (self.query_vectors.shape[1], self.object_vectors.shape[1])

    @staticmethod
    def describe_features(shape: tuple[int, ...]) -> str:
        return f"{shape[0]} question and {shape[1]} answer features"

    def feature_arrays(self) -> list[np.ndarray]:
        """The arrays that hold the features (for a data fingerprint)."""
        return [self.query_vectors.data, self.object_vectors.data]

    @classmethod
    def concat(cls, parts: list["QAData"]) -> "QAData":
        """Stack question-grouped parts into one QAData (questions keep their order)."""
        lengths = np.concatenate([p.query_lengths for p in parts])
        return cls(
            query_vectors=sp.vstack([p.query_vectors for p in parts], format="csr"),
            object_vectors=sp.vstack([p.object_vectors for p in parts], format="csr"),
            y=np.concatenate([p.y for p in parts]), qid=np.concatenate([p.qid for p in parts]),
            docid=np.concatenate([p.docid for p in parts]),
            offsets=np.concatenate([[0], np.cumsum(lengths)]),
        )

    def select_queries(self, keep: np.ndarray) -> "QAData":
        """A new QAData holding only the questions where ``keep`` (bool, per question) is true."""
        rows, offsets = self.query_rows(keep)
        return QAData(query_vectors=self.query_vectors[np.asarray(keep, dtype=bool)],
                      object_vectors=self.object_vectors[rows], y=self.y[rows], qid=self.qid[rows],
                      docid=self.docid[rows], offsets=offsets)

    def to_npz(self, path: str | os.PathLike) -> None:
        """One .npz, written atomically; each CSR matrix as the data/indices/indptr/shape
        arrays scipy.sparse.save_npz uses, prefixed ``query_vectors_`` / ``object_vectors_``."""
        arrays = {"kind": np.array(self.kind), "format": np.array(NPZ_FORMAT), "y": self.y, "qid": self.qid,
                  "docid": self.docid, "offsets": self.offsets}
        for name in ("query_vectors", "object_vectors"):
            matrix = getattr(self, name)
            arrays.update({f"{name}_data": matrix.data, f"{name}_indices": matrix.indices,
                           f"{name}_indptr": matrix.indptr, f"{name}_shape": np.array(matrix.shape)})
        with atomic_path(path, suffix=".npz") as tmp:
            np.savez(tmp, **arrays)

    @classmethod
    def from_npz(cls, path: str | os.PathLike) -> "QAData":
        with np.load(path, allow_pickle=False) as z:
            if "format" not in z.files or str(z["format"]) != NPZ_FORMAT:
                raise ValueError(f"{path}: not a QAData .npz (no format={NPZ_FORMAT!r} entry)")
            matrices = {
                name: sp.csr_matrix((z[f"{name}_data"], z[f"{name}_indices"], z[f"{name}_indptr"]),
                                    shape=tuple(z[f"{name}_shape"]))
                for name in ("query_vectors", "object_vectors")
            }
            return cls(**matrices, y=z["y"], qid=z["qid"], docid=z["docid"], offsets=z["offsets"])
