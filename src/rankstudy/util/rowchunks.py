"""Work over the rows of a large feature matrix a chunk at a time, so that a float64 computation
on float32 features (``features.dtype``) holds a chunk in float64, not a float64 copy of the
whole split (numpy's cast of a mixed-type product or of ``np.asarray(X, float64)`` makes one).
Column sums are those of the whole-array form bit for bit. Products are on float64 features (taken
whole); on float32 features they are within rounding of the whole form (BLAS computes a row at the
edge of its blocks by another path, and ``X.T @ g`` adds the chunks' sums). tests/test_rowchunks.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

CHUNK_BYTES = 1 << 22  # 4 MiB of float64 a chunk: 2,383 rows of Istella's 220 features


def chunk_rows(X: np.ndarray) -> int:
    """Rows of ``X`` whose float64 copy takes at most CHUNK_BYTES (at least one)."""
    return max(1, CHUNK_BYTES // (8 * max(1, int(np.prod(X.shape[1:])))))


def row_chunks(X: np.ndarray, rows: int | None = None) -> Iterator[np.ndarray]:
    """Views of ``rows`` (default :func:`chunk_rows`) consecutive rows of ``X``, the last one shorter."""
    rows = rows or chunk_rows(X)
    for start in range(0, X.shape[0], rows):
        yield X[start:start + rows]


def matvec64(X: np.ndarray, w: np.ndarray, rows: int | None = None) -> np.ndarray:
    """``X @ w`` in float64: float64 ``X`` (and up to ``rows`` rows) at once, any other dtype cast a
    chunk of rows at a time."""
    w, rows = np.asarray(w, dtype=np.float64), rows or chunk_rows(X)
    if X.dtype == np.float64 or X.shape[0] <= rows:
        return X @ w
    return np.concatenate([np.asarray(chunk, dtype=np.float64) @ w for chunk in row_chunks(X, rows)])


def rmatvec64(X: np.ndarray, g: np.ndarray, rows: int | None = None) -> np.ndarray:
    """``X.T @ g`` in float64: float64 ``X`` (and up to ``rows`` rows) at once, any other dtype
    summed over chunks of rows cast one at a time."""
    g, rows = np.asarray(g, dtype=np.float64), rows or chunk_rows(X)
    if X.dtype == np.float64 or X.shape[0] <= rows:
        # cast before transposing: the product of the float64 rows, as for a whole-split cast
        return np.asarray(X, dtype=np.float64).T @ g
    total = np.zeros(X.shape[1])
    for start in range(0, X.shape[0], rows):
        total += np.asarray(X[start:start + rows], dtype=np.float64).T @ g[start:start + rows]
    return total


def column_sums(X: np.ndarray, of: Callable[[np.ndarray], np.ndarray], rows: int | None = None) -> np.ndarray:
    """``of(X).sum(axis=0)`` with ``of`` (float64, elementwise on rows) applied a chunk at a time.
    numpy sums a C-ordered array over axis 0 one row after another, so the running total is
    carried into the next chunk as its first row: the same additions in the same order as one
    sum over the whole array. A single column it sums pairwise, so that is summed whole (its copy
    is one float a row)."""
    rows = rows or chunk_rows(X)
    if X.ndim < 2 or X.shape[1] == 1 or X.shape[0] <= rows:
        return of(X).sum(axis=0)
    total = None
    for chunk in row_chunks(X, rows):
        values = of(chunk)
        total = values.sum(axis=0) if total is None else np.vstack([total, values]).sum(axis=0)
    return total
