"""Second-order (quadratic) features and their Pearson-correlation filter.

Tran et al. (2011, Sec. 2, "Combined Representation") extend a linear rank
function with products ``x_i * x_j`` (``i <= j``) and keep only products whose
absolute Pearson correlation with the relevance label is at least a threshold
``rho`` (their Table 5 sweeps rho = 0 ... 0.30).

:func:`pair_correlations` scores all ``m(m+1)/2`` products without building the
``n x m(m+1)/2`` product matrix. With ``z = x - c`` (``c`` = column means) and
``u_ij = z_i z_j + c_j z_i + c_i z_j`` (= ``x_i x_j`` minus a constant, so it
has the same variance and covariance), every moment needed is an entry of a few
``m x m`` matrices accumulated over row chunks::

    S2 = Z'Z           sum z_i z_j
    S3 = Z'(Z*Z)       sum z_i z_j^2
    S4 = (Z*Z)'(Z*Z)   sum z_i^2 z_j^2
    T  = Z'(yc*Z)      sum z_i z_j yc        (yc = y - mean(y))
    s1 = sum z,  g = Z'yc

S2, S3 and S4 are the blocks of one symmetric product ``W'W``, ``W = [Z, Z*Z]``.
For graded labels (few distinct values) ``W'W`` is accumulated per label value,
which also yields ``T`` as a weighted sum of the per-label ``Z'Z`` blocks.

Numerics: the naive ``E[p^2] - E[p]^2`` loses all digits when a product has a
large mean relative to its spread (e.g. raw LETOR features far from 0). Centring
``x`` and ``y`` first makes the subtracted terms the size of the variance itself
rather than of the squared mean; the exact shift algebra above keeps the result
correct even though the computed means are not exactly the true ones. A product
whose variance is below ``VAR_RTOL`` times the magnitude of the terms it was
computed from is treated as constant (rho = 0, never NaN): it is rounding noise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rankstudy.data.rankdata import RankData

if TYPE_CHECKING:
    import pandas as pd

# Relative variance floor: accumulated rounding in the chunked sums is O(eps * sqrt(n))
# for typical data; 1e-10 leaves room for adversarial summation order at n ~ 1e6.
VAR_RTOL = 1e-10
# Labels with at most this many distinct values take the per-label Gram path (LETOR grades 0-4).
MAX_LABEL_LEVELS = 16
# Rows per chunk of the Gram sums (memory only: 2 m chunk_rows doubles); the pipeline's own is
# features.chunk_rows, whose default the config schema declares.
CHUNK_ROWS = 8192


def pair_index(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature indices ``(i, j)``, ``i <= j``, of all ``m(m+1)/2`` products in row-major order."""
    return np.triu_indices(m)


def pair_correlations_bytes(n_features: int, chunk_rows: int = CHUNK_ROWS) -> int:
    """Peak memory of :func:`pair_correlations` beyond its input, in bytes: the Gram blocks
    (5 m^2 doubles), a chunk of [Z, Z*Z], and the table of every pair (i, j, rho and pandas'
    working copies: about 48 bytes a pair). Grows with m^2: 136 features need 18 MiB, 100,000 features ~600 GiB."""
    m = int(n_features)
    n_pairs = m * (m + 1) // 2
    return 8 * (5 * m * m + 2 * m * int(chunk_rows)) + 48 * n_pairs


def pair_correlations(X: np.ndarray, y: np.ndarray, chunk_rows: int = CHUNK_ROWS) -> pd.DataFrame:
    """Pearson correlation of every product ``x_i * x_j`` (``i <= j``) with ``y``.

    Memory is ``O(chunk_rows * m + m^2)``; the chunk size barely changes the time (on 100k x 136,
    one BLAS thread: 0.43 CPU-s with 2048- and 8192-row chunks, 0.44 with 65536). Returns
    columns ``i``, ``j``
    (0-based, ``i <= j``) and ``rho``; constant products (and a constant ``y``) give 0.
    """
    import pandas as pd  # here: the rankers import this module to check pairs, and need no pandas

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, m) and y (n,); got {X.shape} and {y.shape}")
    if chunk_rows < 1:
        raise ValueError("chunk_rows must be >= 1")
    n, m = X.shape
    ii, jj = pair_index(m)
    if n == 0:
        return pd.DataFrame({"i": ii, "j": jj, "rho": np.zeros(len(ii))})

    c = X.mean(axis=0)
    ybar = y.mean()
    yc = y - ybar
    # Graded labels take few values: processing each chunk one label value at a time makes
    # T = sum_l (l - ybar) Z_l'Z_l a by-product of the Gram update; other labels use a sign split.
    levels, label_group = np.unique(y, return_inverse=True)
    grouped = len(levels) <= MAX_LABEL_LEVELS
    G = np.zeros((2 * m, 2 * m))  # W'W with W = [Z, Z*Z]: blocks S2, S3, S4
    T = np.zeros((m, m)); s1 = np.zeros(m); g = np.zeros(m)
    W = np.empty((min(chunk_rows, n), 2 * m))

    def accumulate(rows: np.ndarray, label_weight: float | None) -> np.ndarray:
        w = W[:len(rows)]
        Z = np.subtract(rows, c, out=w[:, :m])
        np.square(Z, out=w[:, m:])
        gram = w.T @ w  # numpy runs this as a symmetric rank-k update (half a general product)
        col_sum = Z.sum(axis=0)
        G[...] += gram; s1[...] += col_sum
        if label_weight is not None:  # all rows share the label: yc is a constant
            T[...] += label_weight * gram[:m, :m]; g[...] += label_weight * col_sum
        return Z

    for start in range(0, n, chunk_rows):
        Xc = X[start:start + chunk_rows]
        if grouped:
            gc = label_group[start:start + chunk_rows]
            for k in np.unique(gc):
                accumulate(Xc[gc == k], levels[k] - ybar)
            continue
        yz = yc[start:start + chunk_rows]
        Z = accumulate(Xc, None)
        # T = Z' diag(yc) Z = A'A - B'B over rows with yc > 0 and yc < 0: two symmetric
        # rank-k updates that together cost half of one general product
        for sign in (1.0, -1.0):
            pick = sign * yz > 0
            A = Z[pick] * np.sqrt(sign * yz[pick])[:, None]
            T += sign * (A.T @ A)
        g += yz @ Z
    sy = float(yc.sum())
    S2, S3, S4 = G[:m, :m], G[:m, m:], G[m:, m:]
    # means over rows (E[.]) of the accumulated sums
    G /= n; T /= n; s1 /= n; g /= n; sy /= n  # S2, S3, S4 are views of G
    var_y = float(np.mean(yc * yc)) - sy * sy

    # evaluate the upper triangle only; u = z_i z_j + c_j z_i + c_i z_j
    ci, cj = c[ii], c[jj]
    Czz = S2[ii, jj]
    Eu = Czz + cj * s1[ii] + ci * s1[jj]
    Euu = (S4[ii, jj]
           + cj * cj * S2[ii, ii] + ci * ci * S2[jj, jj]
           + 2.0 * cj * S3[jj, ii]          # E[z_i^2 z_j] * c_j
           + 2.0 * ci * S3[ii, jj]          # E[z_i z_j^2] * c_i
           + 2.0 * ci * cj * Czz)
    var_u = Euu - Eu * Eu
    # magnitude of the terms var_u was computed from (bounds the cross terms by Cauchy-Schwarz)
    scale = S4[ii, jj] + cj * cj * S2[ii, ii] + ci * ci * S2[jj, jj]
    Euy = T[ii, jj] + cj * g[ii] + ci * g[jj]
    cov = Euy - Eu * sy

    rho = np.zeros(len(ii))
    ok = var_u > VAR_RTOL * scale
    if var_y > VAR_RTOL * float(np.mean(yc * yc)) and var_y > 0:
        rho[ok] = cov[ok] / np.sqrt(var_u[ok] * var_y)
    # rounding can push |rho| a hair past 1 for exactly collinear products
    np.clip(rho, -1.0, 1.0, out=rho)
    return pd.DataFrame({"i": ii.astype(np.int64), "j": jj.astype(np.int64), "rho": rho})


def select_pairs(correlations: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Rows of ``correlations`` with ``|rho| >= threshold``, sorted by ``(i, j)``.

    Note that ``threshold = 0`` keeps every product, including constant ones (rho = 0).
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    kept = correlations[correlations["rho"].abs() >= threshold]
    return kept.sort_values(["i", "j"], kind="stable").reset_index(drop=True)


def check_pairs(pairs: Any, n_features: int | None = None) -> np.ndarray:
    """``pairs`` (a ``(k, 2)`` array-like, or a DataFrame with columns ``i``, ``j``) as a
    ``(k, 2)`` int64 array of 0-based feature indices, range-checked when ``n_features`` is given."""
    if hasattr(pairs, "columns"):  # a DataFrame, e.g. from select_pairs (no pandas import: the jobs that score need none)
        pairs = pairs[["i", "j"]].to_numpy()
    p = np.asarray(pairs, dtype=np.int64)
    if p.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"pairs must have shape (k, 2), got {p.shape}")
    if p.min() < 0:
        raise ValueError("pair indices must be non-negative")
    if n_features is not None and p.max() >= n_features:
        raise ValueError(f"pair index {int(p.max())} out of range for {n_features} features")
    return p


def second_order(X: np.ndarray, pairs: Any) -> np.ndarray:
    """Products ``X[:, i] * X[:, j]`` for each row ``(i, j)`` of ``pairs`` -> ``(n, k)``.

    ``pairs`` is a ``(k, 2)`` integer array (or a DataFrame with columns ``i``, ``j``).
    """
    X = np.asarray(X, dtype=np.float64)
    p = check_pairs(pairs, X.shape[1])
    return X[:, p[:, 0]] * X[:, p[:, 1]]


def expand(data: RankData, pairs: Any) -> RankData:
    """``data`` with features ``[x, x_i * x_j for (i, j) in pairs]`` (originals first, then products in order)."""
    return data.with_features(np.hstack([data.X, second_order(data.X, pairs)]))


class SecondOrderSelector:
    """Fit the rho filter on a training split, then :func:`expand` any split with the kept pairs.

    ``threshold=None`` disables second-order features (transform returns first-order features only).
    """

    def __init__(self, threshold: float | None = 0.1, chunk_rows: int = CHUNK_ROWS) -> None:
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1] or None, got {threshold}")
        self.threshold = threshold
        self.chunk_rows = chunk_rows
        self.pairs_: np.ndarray | None = None

    def __repr__(self) -> str:
        return f"SecondOrderSelector(threshold={self.threshold!r}, chunk_rows={self.chunk_rows})"

    def fit(self, train: RankData) -> "SecondOrderSelector":
        if self.threshold is None:
            self.pairs_ = np.zeros((0, 2), dtype=np.int64)
        else:
            corr = pair_correlations(train.X, train.y, chunk_rows=self.chunk_rows)
            self.pairs_ = check_pairs(select_pairs(corr, self.threshold))
        return self

    def transform(self, data: RankData) -> RankData:
        if self.pairs_ is None:
            raise RuntimeError("SecondOrderSelector must be fitted before transform")
        return expand(data, self.pairs_)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"threshold": self.threshold, "chunk_rows": self.chunk_rows}
        if self.pairs_ is not None:
            d["pairs"] = self.pairs_.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SecondOrderSelector":
        sel = cls(d["threshold"], d.get("chunk_rows", CHUNK_ROWS))
        if "pairs" in d:
            sel.pairs_ = check_pairs(d["pairs"])
        return sel
