"""The quadratic rank functional of Tran et al. (2011, Eq. 4), scored without its product matrix.

    f(x) = w'x + x'Cx = w'x + sum_k c_k x_{i_k} x_{j_k}

``C`` is nonzero only on the ``(i_k, j_k)`` pairs kept by the Pearson filter
(:mod:`rankstudy.features.pairs`), so the quadratic part has one coefficient ``c_k`` per
pair. Materialising the ``n x k`` product columns (:func:`rankstudy.features.pairs.second_order`)
costs ``8 n k`` bytes -- 7.5 GB for 100k documents and all 9,316 pairs of 136
features -- and gathering them even one row chunk at a time is slow (~2 ms per
pair per 100k rows, measured). Instead the coefficients are scattered into the
dense block ``C[I, J]`` over the features that occur as first (``I``) and second
(``J``) members of a pair, and per row chunk

* scores:  ``x'Cx`` = row-wise dot of ``X_I C`` with ``X_J``;
* vjp:     ``dc_k = (X_I' diag(g) X_J)[i_k, j_k]``.

Both are BLAS products costing ``2 n |I| |J|`` flops (at most ``2 n m^2``, whatever
``k``) with memory ``chunk_rows * (|I| + |J|) + |I| |J|`` floats -- independent of ``k``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rankstudy.features.pairs import check_pairs
from rankstudy.scorers.linear import PARAMETERS as LINEAR_PARAMETERS, BoundLinear, LinearScorer
from rankstudy.util.params import Integer, Param, check_value, defaults
from rankstudy.util.rowchunks import matvec64, rmatvec64

# the scorer's settings, declared once: the linear ranker takes chunk_rows as its parameter and
# checks it; the pairs are the ranker's (null there: the linear functional)
PARAMETERS = {
    "intercept": LINEAR_PARAMETERS["intercept"],
    "chunk_rows": Param(Integer(1), 8192),  # memory: chunk_rows * (|I| + |J|) floats at a time
}
DEFAULTS = defaults(PARAMETERS)


class _PairBlock:
    """Where each pair's coefficient sits in the dense block ``C[I, J]``."""

    def __init__(self, pairs: np.ndarray, n_features: int) -> None:
        self.rows, self.row_of = np.unique(pairs[:, 0], return_inverse=True)
        self.cols, self.col_of = np.unique(pairs[:, 1], return_inverse=True)
        # a slice of all columns is a free view; fancy-indexing them would copy the chunk
        self.all_rows = len(self.rows) == n_features
        self.all_cols = len(self.cols) == n_features

    def dense(self, c: np.ndarray) -> np.ndarray:
        block = np.zeros((len(self.rows), len(self.cols)))
        np.add.at(block, (self.row_of, self.col_of), c)  # add: a repeated pair sums its coefficients
        return block

    def left(self, Xc: np.ndarray) -> np.ndarray:
        return Xc if self.all_rows else Xc[:, self.rows]

    def right(self, Xc: np.ndarray) -> np.ndarray:
        return Xc if self.all_cols else Xc[:, self.cols]


def _check_inputs(X: Any, pairs: Any, chunk_rows: int) -> tuple[np.ndarray, np.ndarray]:
    # float32 features (features.dtype) stay float32: each chunk is cast, not a copy of the split
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, m), got shape {X.shape}")
    # the functions are called directly too (benchmarks), not only through a checked ranker
    check_value("chunk_rows", chunk_rows, PARAMETERS["chunk_rows"].constraints)
    return X, check_pairs(pairs, X.shape[1])


def quadratic_scores(X: np.ndarray, pairs: Any, w: np.ndarray, c: np.ndarray,
                     chunk_rows: int = DEFAULTS["chunk_rows"]) -> np.ndarray:
    """``X w + sum_k c_k X[:, i_k] X[:, j_k]`` -> ``(n,)``, in row chunks (no ``n x k`` matrix)."""
    X, p = _check_inputs(X, pairs, chunk_rows)
    w = np.asarray(w, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if w.shape != (X.shape[1],) or c.shape != (len(p),):
        raise ValueError(f"w must have shape ({X.shape[1]},) and c ({len(p)},); got {w.shape} and {c.shape}")
    scores = matvec64(X, w)
    if not len(p):
        return scores
    block = _PairBlock(p, X.shape[1])
    C = block.dense(c)
    chunk_rows = int(chunk_rows)
    for start in range(0, len(X), chunk_rows):
        Xc = np.asarray(X[start:start + chunk_rows], dtype=np.float64)
        # row-wise x_I' C x_J without forming the (rows x rows) product
        scores[start:start + chunk_rows] += np.einsum("ij,ij->i", block.left(Xc) @ C, block.right(Xc))
    return scores


def quadratic_vjp(X: np.ndarray, pairs: Any, g: np.ndarray,
                  chunk_rows: int = DEFAULTS["chunk_rows"]) -> tuple[np.ndarray, np.ndarray]:
    """Gradient of ``sum_n g_n f(x_n)`` wrt ``(w, c)``: ``dw = X'g`` and
    ``dc_k = sum_n g_n x_{n,i_k} x_{n,j_k}``, accumulated over row chunks."""
    X, p = _check_inputs(X, pairs, chunk_rows)
    g = np.asarray(g, dtype=np.float64)
    if g.shape != (len(X),):
        raise ValueError(f"g must have shape ({len(X)},), got {g.shape}")
    dw = rmatvec64(X, g)
    if not len(p):
        return dw, np.zeros(0)
    block = _PairBlock(p, X.shape[1])
    M = np.zeros((len(block.rows), len(block.cols)))
    chunk_rows = int(chunk_rows)
    for start in range(0, len(X), chunk_rows):
        Xc = np.asarray(X[start:start + chunk_rows], dtype=np.float64)
        M += block.left(Xc).T @ (g[start:start + chunk_rows, None] * block.right(Xc))
    return dw, M[block.row_of, block.col_of]


class BoundQuadratic(BoundLinear):
    """theta = [w, c, b]: weights, pair coefficients (both penalised), then the bias."""

    def __init__(self, X: np.ndarray, intercept: bool, pairs: np.ndarray, chunk_rows: int) -> None:
        self.pairs = pairs
        self.chunk_rows = chunk_rows
        super().__init__(X, intercept)

    def n_weights(self) -> int:
        return self.X.shape[1] + len(self.pairs)

    def weight_scores(self, weights: np.ndarray) -> np.ndarray:
        m = self.X.shape[1]
        return quadratic_scores(self.X, self.pairs, weights[:m], weights[m:], self.chunk_rows)

    def weight_vjp(self, g: np.ndarray) -> np.ndarray:
        return np.concatenate(quadratic_vjp(self.X, self.pairs, g, self.chunk_rows))

    def unpack(self, theta: np.ndarray) -> dict:
        m = self.X.shape[1]
        return {**super().unpack(theta), "pair_coef": theta[m:self.n_penalized].tolist()}


class QuadraticScorer(LinearScorer):
    """score = w'x + sum_k c_k x_{i_k} x_{j_k} (+ b) over the 0-based feature index ``pairs``
    (Tran et al. 2011, Eq. 4; e.g. the pairs kept by the rho filter), evaluated in chunks of
    ``chunk_rows`` rows; the penalty covers both w and c."""

    name = "quadratic"
    parameters = PARAMETERS

    def __init__(self, pairs, intercept: bool = DEFAULTS["intercept"],
                 chunk_rows: int = DEFAULTS["chunk_rows"]) -> None:
        # the settings are checked against PARAMETERS by the ranker that builds the scorer
        super().__init__(intercept)
        self.pairs = check_pairs(pairs)
        self.chunk_rows = int(chunk_rows)

    def bind(self, data) -> BoundQuadratic:
        self.check_kind(data)
        return BoundQuadratic(data.X, self.intercept, check_pairs(self.pairs, data.n_features), self.chunk_rows)

    def _extra(self, parts: dict) -> list[np.ndarray]:
        pair_coef = np.asarray(parts.get("pair_coef", []), dtype=np.float64)
        if len(pair_coef) != len(self.pairs):
            raise ValueError(f"saved state has {len(pair_coef)} pair coefficients for {len(self.pairs)} pairs")
        return [pair_coef]
