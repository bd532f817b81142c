"""Rows grouped by query: the layout every split type shares.

The documents of query ``q`` are the contiguous rows ``offsets[q]:offsets[q+1]``.
Everything downstream (features, losses, metrics) works on this layout, either as
flat arrays with segment boundaries or as padded ``(n_queries, max_len)`` arrays
built by :func:`pad` (or, once per fit, by :func:`padded_layout`).
"""

from __future__ import annotations

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
    mask.ravel()[flat] = True  # ravel(): a view of the new array, much faster than .flat[]
    padded_labels = np.zeros(shape)
    padded_labels.ravel()[flat] = labels
    return shape, flat, mask, padded_labels

