"""The Nadaraya-Watson ranking function of Huang and Frey (2008, Eq. 7): a document's score is
the kernel-weighted mean of the training documents' labels,

    rho(x; a) = sum_j K(x_j, x) y_j / sum_j K(x_j, x),  K = exp(-1/2 (x - x_j)' diag(a^2) (x - x_j)),

over a reference set (x_j, y_j), the training split. theta = a, one bandwidth per feature.
The weights are a softmax of -d_a^2/2, computed with a shift, so they never underflow to 0/0.
A training document is scored without itself (leave-one-out: its own label would otherwise
be its score). Distances come from BLAS products, d^2 = x^2.a^2 + x_j^2.a^2 - 2 (x a^2).x_j.

Cost: every scored document meets every reference document, so one pass over the training
split (an SGD epoch) is two (n x N x m) matrix products and a softmax over n x N, quadratic in
the training documents (see docs/methods.md for the figures at MSLR-WEB30K's size).

Memory, bounded whatever the split's size: the squared reference features (N x m) are computed
once per scorer and shared by every bound split and row subset (a per-query objective of SGD
holds views, not copies); weights are computed in chunks of at most ``chunk_rows`` scored rows
and at most KERNEL_BLOCK_ELEMENTS weights (rows x N), in place (two chunk-sized arrays at once);
a forward pass keeps its weights for the vector-Jacobian product only when they are at most
KEPT_ELEMENTS (one query's step, mostly), else recomputes them there. Chunks only group rows:
a row's score does not depend on them; the vjp sums over chunks in their order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rankstudy.scorers.base import BoundScorer, Scorer, Vjp
from rankstudy.util.params import Integer, Param, defaults

# the scorer's setting, declared once: StructRank takes it as its parameter and checks it
PARAMETERS = {"chunk_rows": Param(Integer(1), 256)}
DEFAULTS = defaults(PARAMETERS)

# one (rows, N) chunk of weights: 128 MB in float64 (at MSLR-WEB30K's 2.27M training documents,
# 7 rows a chunk); below 65,536 reference documents a chunk is chunk_rows (256) rows
KERNEL_BLOCK_ELEMENTS = 1 << 24
# a forward pass's weights kept for its vjp up to this many (512 MB), so a query's step computes
# them once; above, the vjp recomputes them chunk by chunk (one more matrix product)
KEPT_ELEMENTS = 1 << 26


def _as_slice(rows: np.ndarray) -> slice | np.ndarray:
    """A run of consecutive row indices as a slice (indexing with it gives views), else ``rows``."""
    rows = np.asarray(rows)
    if rows.dtype == bool:
        rows = np.flatnonzero(rows)
    if rows.ndim == 1 and len(rows) and rows[-1] - rows[0] == len(rows) - 1 and np.all(np.diff(rows) == 1):
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


class BoundKernel(BoundScorer):
    """Scores the rows ``X`` against the reference; ``self_index[i]`` is row i's position in
    the reference (-1 if it is not there). ``reference_X2`` is ``reference_X ** 2`` (shared)."""

    def __init__(self, X: np.ndarray, self_index: np.ndarray, reference_X: np.ndarray, reference_y: np.ndarray,
                 chunk_rows: int, reference_X2: np.ndarray | None = None) -> None:
        self.X, self.self_index = X, self_index
        self.RX, self.Ry = reference_X, reference_y
        self.RX2 = reference_X ** 2 if reference_X2 is None else reference_X2
        self.chunk_rows = chunk_rows
        self.n_params = self.n_penalized = X.shape[1]
        self.nonnegative = True  # bandwidths (a^2 makes the sign irrelevant; Section 5 keeps theta >= 0)

    def rows(self, rows: np.ndarray) -> "BoundKernel":
        rows = _as_slice(rows)
        return BoundKernel(self.X[rows], self.self_index[rows], self.RX, self.Ry, self.chunk_rows, self.RX2)

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(0.0, 1.0, self.n_params)  # Section 5: random in [0, 1]

    def chunks(self) -> list[slice]:
        """The scored rows in chunks of at most ``chunk_rows`` rows and KERNEL_BLOCK_ELEMENTS weights."""
        n = len(self.X)
        step = max(1, min(int(self.chunk_rows), KERNEL_BLOCK_ELEMENTS // max(1, len(self.RX))))
        return [slice(i, min(n, i + step)) for i in range(0, n, step)]

    def _weights(self, a2: np.ndarray, RX2a2: np.ndarray, rows: slice) -> np.ndarray:
        """Softmax over the reference of -d^2/2 for the scored rows ``rows``: (rows, N).
        ``RX2a2`` is ``reference_X ** 2 @ a2``. In place, in the operation order of
        ``-0.5 * ((X ** 2) @ a2 + RX2a2 - (2 X a2) @ RX')`` (the same rounding)."""
        X = self.X[rows]
        d2 = np.add((X ** 2) @ a2[:, None], RX2a2[None, :])
        cross = 2.0 * (X * a2) @ self.RX.T  # (2 (X a2)) @ RX', as Python groups it
        d2 -= cross
        del cross
        d2 *= -0.5  # the logits
        own = self.self_index[rows]
        mine = own >= 0
        d2[np.flatnonzero(mine), own[mine]] = -np.inf  # leave-one-out
        d2 -= d2.max(axis=1, keepdims=True)
        np.exp(d2, out=d2)
        d2 /= d2.sum(axis=1, keepdims=True)
        return d2

    def scores(self, theta: np.ndarray) -> np.ndarray:
        return self._forward(theta, need_vjp=False)[0]

    def forward(self, theta: np.ndarray) -> tuple[np.ndarray, Vjp]:
        return self._forward(theta, need_vjp=True)

    def _forward(self, theta: np.ndarray, need_vjp: bool) -> tuple[np.ndarray, Vjp]:
        a = np.asarray(theta, dtype=np.float64)
        a2 = a * a
        RX2a2 = self.RX2 @ a2
        n = len(self.X)
        chunks = self.chunks()
        # a query's step: keep its weights for the vjp; a whole split: recompute them there, so
        # memory stays one chunk's
        keep = need_vjp and n * len(self.RX) <= KEPT_ELEMENTS
        kept = [] if keep else None
        scores = np.zeros(0) if not n else np.empty(n)
        for c in chunks:
            p = self._weights(a2, RX2a2, c)
            scores[c] = p @ self.Ry
            if keep:
                kept.append(p)
            del p  # not alive beside the next chunk's

        def vjp(g: np.ndarray) -> np.ndarray:
            # d rho_i / d log K_ij = p_ij (y_j - rho_i);  d log K_ij / d a_l = -a_l (x_il - x_jl)^2
            total = np.zeros(len(a))
            for i, c in enumerate(chunks):
                p = kept[i] if keep else self._weights(a2, RX2a2, c)
                spread = np.subtract(self.Ry[None, :], scores[c, None])
                # W = g p (y - rho), in that order; a kept p is not overwritten (a second vjp)
                W = np.multiply(g[c, None], p, out=None if keep else p)
                W *= spread
                del spread
                X = self.X[c]
                sq = (X ** 2 * W.sum(axis=1)[:, None]).sum(axis=0) - 2.0 * (X * (W @ self.RX)).sum(axis=0) \
                    + W.sum(axis=0) @ self.RX2
                total += sq
                del p, W
            return -a * total

        return scores, vjp

    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        return {"bandwidth": np.asarray(theta, dtype=np.float64).tolist()}


class NadarayaWatsonScorer(Scorer):
    """Eq. 7 over ``reference_X`` (n_ref, m) with labels ``reference_y``; scoring the reference
    itself (``bind`` of the very split, or its rows) leaves each document out of its own sum.
    Every split bound by one scorer shares its ``reference_X ** 2``."""

    name = "nadaraya_watson"
    parameters = PARAMETERS

    def __init__(self, reference_X: np.ndarray, reference_y: np.ndarray,
                 chunk_rows: int = DEFAULTS["chunk_rows"]) -> None:
        self.reference_X = np.ascontiguousarray(reference_X, dtype=np.float64)
        self.reference_y = np.asarray(reference_y, dtype=np.float64)
        if self.reference_X.ndim != 2 or len(self.reference_X) != len(self.reference_y) or not len(self.reference_y):
            raise ValueError("the Nadaraya-Watson reference needs one label per row of a non-empty 2-D X")
        self.chunk_rows = int(chunk_rows)
        self._reference_X2: np.ndarray | None = None

    @property
    def reference_X2(self) -> np.ndarray:
        """``reference_X ** 2``, computed at the first bind (as large as the training split)."""
        if self._reference_X2 is None:
            self._reference_X2 = self.reference_X ** 2
        return self._reference_X2

    def bind(self, data) -> BoundKernel:
        self.check_kind(data)
        if data.n_features != self.reference_X.shape[1]:
            raise ValueError(f"expected {self.reference_X.shape[1]} features, got {data.n_features}")
        is_reference = data.X is self.reference_X or (
            data.X.shape == self.reference_X.shape and np.array_equal(data.X, self.reference_X))
        self_index = np.arange(len(data.X)) if is_reference else np.full(len(data.X), -1)
        return BoundKernel(data.X, self_index, self.reference_X, self.reference_y, self.chunk_rows,
                           self.reference_X2)

    def pack(self, parts: dict[str, Any]) -> np.ndarray:
        return np.asarray(parts["bandwidth"], dtype=np.float64)

    def feature_shape(self, parts: dict[str, Any]) -> tuple[int, ...]:
        return (len(parts["bandwidth"]),)
