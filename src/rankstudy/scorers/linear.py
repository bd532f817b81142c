"""The linear scoring function f(x) = w'x (+ b) on LETOR feature vectors."""

from __future__ import annotations

from typing import Any

import numpy as np

from rankstudy.scorers.base import BoundScorer, Scorer, Vjp
from rankstudy.util.params import Boolean, Param, defaults

# the scorer's setting, declared once (the quadratic scorer takes it too); no ranker exposes it:
# a ranker fits a bias when its loss needs one
PARAMETERS = {"intercept": Param(Boolean(), False, help="fit a bias b (not penalised)")}
DEFAULTS = defaults(PARAMETERS)


class BoundLinear(BoundScorer):
    """theta = [w, b]: the weights (penalised), then the bias if there is one."""

    def __init__(self, X: np.ndarray, intercept: bool) -> None:
        self.X = X
        self.intercept = intercept
        self.n_penalized = self.n_weights()
        self.n_params = self.n_penalized + int(intercept)

    def n_weights(self) -> int:
        return self.X.shape[1]

    def rows(self, rows: np.ndarray) -> "BoundLinear":
        return BoundLinear(self.X[rows], self.intercept)

    # float32 features (features.dtype) meet float32 vectors: mixing dtypes would make numpy
    # convert all of X to float64 in every product; scores and gradients return as float64
    def weight_scores(self, weights: np.ndarray) -> np.ndarray:
        return (self.X @ weights.astype(self.X.dtype, copy=False)).astype(np.float64, copy=False)

    def weight_vjp(self, g: np.ndarray) -> np.ndarray:
        """d sum_n g_n f_n / d weights."""
        return (self.X.T @ g.astype(self.X.dtype, copy=False)).astype(np.float64, copy=False)

    def forward(self, theta: np.ndarray) -> tuple[np.ndarray, Vjp]:
        k = self.n_penalized
        s = self.weight_scores(theta[:k])
        if self.intercept:
            s = s + theta[k]

        def vjp(g: np.ndarray) -> np.ndarray:
            grad = np.empty(self.n_params)
            grad[:k] = self.weight_vjp(g)
            if self.intercept:
                grad[k] = g.sum()
            return grad

        return s, vjp

    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        m = self.X.shape[1]
        return {"coef": theta[:m].tolist(),
                "intercept": float(theta[self.n_penalized]) if self.intercept else 0.0}


class LinearScorer(Scorer):
    """score = w'x, plus a bias b when ``intercept`` (regression losses compare scores with
    labels, so they need one; ranking losses are shift-invariant per query, where a bias
    would be unidentifiable)."""

    name = "linear"
    linear_in_params = True  # also the quadratic functional's: linear in (w, c)
    parameters = PARAMETERS

    def __init__(self, intercept: bool = DEFAULTS["intercept"]) -> None:
        self.intercept = bool(intercept)

    def bind(self, data) -> BoundLinear:
        self.check_kind(data)
        return BoundLinear(data.X, self.intercept)

    def pack(self, parts: dict[str, Any]) -> np.ndarray:
        bias = [float(parts["intercept"])] if self.intercept else []
        return np.concatenate([np.asarray(parts["coef"], dtype=np.float64), *self._extra(parts), bias])

    def _extra(self, parts: dict[str, Any]) -> list[np.ndarray]:
        return []

    def feature_shape(self, parts: dict[str, Any]) -> tuple[int, ...]:
        return (len(parts["coef"]),)
