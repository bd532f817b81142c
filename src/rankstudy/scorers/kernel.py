"""The Nadaraya-Watson ranking function of Huang and Frey (2008, Eq. 7): a document's score is
the kernel-weighted mean of the training documents' labels,

    rho(x; a) = sum_j K(x_j, x) y_j / sum_j K(x_j, x),  K = exp(-1/2 (x - x_j)' diag(a^2) (x - x_j)),

over a reference set (x_j, y_j), the training split. theta = a, one bandwidth per feature.
The weights are a softmax of -d_a^2/2, computed with a shift, so they never underflow to 0/0.
A training document is scored without itself (leave-one-out: its own label would otherwise
be its score). Distances come from BLAS products, d^2 = x^2.a^2 + x_j^2.a^2 - 2 (x a^2).x_j, in
chunks of ``chunk_rows`` scored documents: memory O(chunk_rows x reference size).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rankstudy.scorers.base import BoundScorer, Scorer, Vjp


class BoundKernel(BoundScorer):
    """Scores the rows ``X`` against the reference; ``self_index[i]`` is row i's position in
    the reference (-1 if it is not there)."""

    def __init__(self, X: np.ndarray, self_index: np.ndarray, reference_X: np.ndarray, reference_y: np.ndarray,
                 chunk_rows: int) -> None:
        self.X, self.self_index = X, self_index
        self.RX, self.Ry = reference_X, reference_y
        self.RX2 = reference_X ** 2
        self.chunk_rows = chunk_rows
        self.n_params = self.n_penalized = X.shape[1]
        self.nonnegative = True  # bandwidths (a^2 makes the sign irrelevant; Section 5 keeps theta >= 0)

    def rows(self, rows: np.ndarray) -> "BoundKernel":
        return BoundKernel(self.X[rows], self.self_index[rows], self.RX, self.Ry, self.chunk_rows)

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(0.0, 1.0, self.n_params)  # Section 5: random in [0, 1]

    def _weights(self, a2: np.ndarray, rows: slice) -> np.ndarray:
        """Softmax over the reference of -d^2/2 for the scored rows ``rows``: (rows, N)."""
        X = self.X[rows]
        d2 = (X ** 2) @ a2[:, None] + (self.RX2 @ a2)[None, :] - 2.0 * (X * a2) @ self.RX.T
        logits = -0.5 * d2
        own = self.self_index[rows]
        mine = own >= 0
        logits[np.flatnonzero(mine), own[mine]] = -np.inf  # leave-one-out
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def forward(self, theta: np.ndarray) -> tuple[np.ndarray, Vjp]:
        a = np.asarray(theta, dtype=np.float64)
        a2 = a * a
        n = len(self.X)
        chunks = [slice(i, min(n, i + self.chunk_rows)) for i in range(0, n, self.chunk_rows)]
        # one chunk (e.g. a query's step of stochastic training): keep its weights for the vjp;
        # several: recompute them there, so memory stays one chunk's
        kept = [self._weights(a2, chunks[0])] if len(chunks) == 1 else None
        scores = np.concatenate([(kept[0] if kept else self._weights(a2, c)) @ self.Ry for c in chunks]) \
            if n else np.zeros(0)

        def vjp(g: np.ndarray) -> np.ndarray:
            # d rho_i / d log K_ij = p_ij (y_j - rho_i);  d log K_ij / d a_l = -a_l (x_il - x_jl)^2
            total = np.zeros(len(a))
            for c in chunks:
                p = kept[0] if kept else self._weights(a2, c)
                W = g[c, None] * p * (self.Ry[None, :] - scores[c, None])
                X = self.X[c]
                sq = (X ** 2 * W.sum(axis=1)[:, None]).sum(axis=0) - 2.0 * (X * (W @ self.RX)).sum(axis=0) \
                    + W.sum(axis=0) @ self.RX2
                total += sq
            return -a * total

        return scores, vjp

    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        return {"bandwidth": np.asarray(theta, dtype=np.float64).tolist()}


class NadarayaWatsonScorer(Scorer):
    """Eq. 7 over ``reference_X`` (n_ref, m) with labels ``reference_y``; scoring the reference
    itself (``bind`` of the very split, or its rows) leaves each document out of its own sum."""

    name = "nadaraya_watson"

    def __init__(self, reference_X: np.ndarray, reference_y: np.ndarray, chunk_rows: int = 256) -> None:
        self.reference_X = np.ascontiguousarray(reference_X, dtype=np.float64)
        self.reference_y = np.asarray(reference_y, dtype=np.float64)
        if self.reference_X.ndim != 2 or len(self.reference_X) != len(self.reference_y) or not len(self.reference_y):
            raise ValueError("the Nadaraya-Watson reference needs one label per row of a non-empty 2-D X")
        self.chunk_rows = int(chunk_rows)

    def bind(self, data) -> BoundKernel:
        self.check_kind(data)
        if data.n_features != self.reference_X.shape[1]:
            raise ValueError(f"expected {self.reference_X.shape[1]} features, got {data.n_features}")
        is_reference = data.X is self.reference_X or (
            data.X.shape == self.reference_X.shape and np.array_equal(data.X, self.reference_X))
        self_index = np.arange(len(data.X)) if is_reference else np.full(len(data.X), -1)
        return BoundKernel(data.X, self_index, self.reference_X, self.reference_y, self.chunk_rows)

    def pack(self, parts: dict[str, Any]) -> np.ndarray:
        return np.asarray(parts["bandwidth"], dtype=np.float64)

    def feature_shape(self, parts: dict[str, Any]) -> tuple[int, ...]:
        return (len(parts["bandwidth"]),)
