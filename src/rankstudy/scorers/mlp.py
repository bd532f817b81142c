"""A feed-forward network on LETOR feature vectors (allRank's ``FCModel``): each document scored
on its own, f(x) = w_out' h_K + b_out with h_k = drop(act(W_k' h_{k-1} + b_k)), h_0 = norm(x).

Everything is numpy: the forward pass is one matrix product per layer over all the rows bound
(no loop over documents), and the vector-Jacobian product is the same products transposed.

theta = [W_1, ..., W_K, w_out, b_1, ..., b_K, b_out] (each W row-major, fan_in x fan_out): the
weights first (penalised by the objective's L2 term), then the biases (not penalised).

* ``activation``: one of :data:`ACTIVATIONS`; ``initial`` draws He-normal weights for the
  ReLU family and Glorot-normal ones for tanh and sigmoid (biases 0).
* ``dropout`` p: inverted dropout after every hidden activation, only in
  :meth:`BoundMLP.train_forward` (a solver's training step, with its own seeded generator);
  ``forward`` and ``scores`` (prediction, the objective L-BFGS and the did-it-learn check
  see) are deterministic, with no dropout. The vjp of ``train_forward`` is exact for the mask drawn.
* ``input_transform``, ``input_noise``: DASALC's log1p transform and training noise
  (:mod:`rankstudy.scorers.inputs`), before the norm.
* ``input_norm``: ``"layer"`` standardises each document's feature vector over its features
  (mean 0, variance 1; no parameters: a gain and bias there would only rescale the first layer);
  ``"batch"`` standardises each feature with a mean and standard deviation fixed once, from the
  first split the scorer is bound to (the training split; the ranker passes them on to
  validation and test) and saved with the model. That is batch normalisation's inference form
  with the training split as the one batch; unlike a torch ``BatchNorm1d`` the statistics do
  not move during training. Either is a fixed transform of the inputs, so no gradient flows
  through it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rankstudy.scorers import inputs
from rankstudy.scorers.activations import ACTIVATIONS, activate
from rankstudy.scorers.base import BoundScorer, Scorer, Vjp
from rankstudy.util.params import Choice, Choices, Integer, Listing, Param, Real, Uniform, defaults
from rankstudy.util.rowchunks import column_sums, row_chunks

INPUT_NORMS = ("batch", "layer")
# the scorer's settings, declared once: the neural ranker takes them as its parameters and checks them
PARAMETERS = {
    "hidden": Param(Listing(Integer(1), what="a list of positive integers (hidden layer sizes)"), [64, 32],
                    space=Choices([[64, 32], [128, 64], [256, 128, 64]])),
    "activation": Param(Choice(ACTIVATIONS, "mlp activation"), "relu"),
    "dropout": Param(Real(0, 1, high_open=True), 0.0, space=Uniform(0.0, 0.5)),
    "input_norm": Param([None, Choice(INPUT_NORMS, "input_norm")], None),
    **inputs.PARAMETERS,
}
DEFAULTS = defaults(PARAMETERS)
NORM_EPS = 1e-5  # added to variances (torch's LayerNorm / BatchNorm default)
SCORE_CHUNK = 16384  # prediction scores this many rows at a time: memory bounded by the chunk


def input_statistics(X: np.ndarray, transform: str = "none") -> dict[str, list[float]]:
    """Per-feature mean and scale (standard deviation, 1 where a feature is constant) of the
    features as the network sees them (``transform``; float64), a chunk of rows at a time: no
    float64 copy of the split (:mod:`rankstudy.util.rowchunks`), the same values as
    ``X.mean(axis=0)`` and ``X.var(axis=0)``."""
    n = X.shape[0]
    mean = column_sums(X, lambda rows: inputs.transform(rows, transform)) / n
    var = column_sums(X, lambda rows: np.square(inputs.transform(rows, transform) - mean)) / n
    std = np.sqrt(var + NORM_EPS)
    return {"input_mean": mean.tolist(), "input_scale": std.tolist()}


class BoundMLP(BoundScorer):
    def __init__(self, X: np.ndarray, scorer: "MLPScorer") -> None:
        self.X = X
        self.scorer = scorer
        sizes = [X.shape[1], *scorer.hidden, 1]
        self.shapes = list(zip(sizes[:-1], sizes[1:]))
        self.n_penalized = sum(a * b for a, b in self.shapes)
        self.n_params = self.n_penalized + sum(b for _, b in self.shapes)
        if scorer.input_norm == "batch" and scorer.input_stats is None:
            # the first split bound: the training split
            scorer.input_stats = input_statistics(X, scorer.input_transform)
        if scorer.input_norm == "batch" and len(scorer.input_stats["input_mean"]) != X.shape[1]:
            raise ValueError(f"mlp scorer: input statistics for {len(scorer.input_stats['input_mean'])} features, "
                             f"the data has {X.shape[1]}")

    def rows(self, rows: np.ndarray) -> "BoundMLP":
        return BoundMLP(self.X[rows], self.scorer)

    def split(self, theta: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """theta as (weight matrices, bias vectors), views into theta."""
        weights, biases, at = [], [], 0
        for a, b in self.shapes:
            weights.append(theta[at:at + a * b].reshape(a, b))
            at += a * b
        for _, b in self.shapes:
            biases.append(theta[at:at + b])
            at += b
        return weights, biases

    def inputs(self, X: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """h_0 of the rows ``X`` (as bound: float32 or float64): transformed, noised (training,
        with ``rng``), normalised; float64 for these rows only."""
        X = inputs.add_noise(inputs.transform(X, self.scorer.input_transform), self.scorer.input_noise, rng)
        norm = self.scorer.input_norm
        if norm == "layer":
            return (X - X.mean(axis=1, keepdims=True)) / np.sqrt(X.var(axis=1, keepdims=True) + NORM_EPS)
        if norm == "batch":
            stats = self.scorer.input_stats
            return (X - np.asarray(stats["input_mean"])) / np.asarray(stats["input_scale"])
        return X

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        # the network is not convex in theta and theta = 0 is a stationary point (every hidden
        # unit alike): start from He (ReLU family) or Glorot (tanh, sigmoid) normal weights
        he = self.scorer.activation in ("relu", "leaky_relu")
        theta = np.zeros(self.n_params)
        weights, _ = self.split(theta)
        for k, W in enumerate(weights):
            fan_in, fan_out = W.shape
            last = k == len(weights) - 1
            std = np.sqrt(2.0 / fan_in) if he and not last else np.sqrt(2.0 / (fan_in + fan_out))
            W[...] = rng.normal(0.0, std, W.shape)
        return theta

    def _run(self, theta: np.ndarray, X: np.ndarray, rng: np.random.Generator | None, need_vjp: bool):
        theta = self.check(theta)
        weights, biases = self.split(theta)
        p = self.scorer.dropout if rng is not None else 0.0
        h = self.inputs(X, rng)
        hs, slopes = [h], []  # each layer's input, and act' times the dropout mask
        for W, b in zip(weights[:-1], biases[:-1]):
            h, slope = activate(self.scorer.activation, h @ W + b)
            if p > 0:
                keep = (rng.random(h.shape) >= p) / (1.0 - p)  # inverted dropout: E[h] unchanged
                h, slope = h * keep, slope * keep
            if need_vjp:
                hs.append(h)
                slopes.append(slope)
        scores = h @ weights[-1][:, 0] + biases[-1][0]
        if not need_vjp:
            return scores, None

        def vjp(g: np.ndarray) -> np.ndarray:
            g = np.asarray(g, dtype=np.float64)
            grad = np.empty(self.n_params)
            grad_W, grad_b = self.split(grad)
            grad_W[-1][:, 0] = hs[-1].T @ g
            grad_b[-1][0] = g.sum()
            dz = g[:, None]  # d/d(pre-activation) of the current layer
            for k in range(len(weights) - 1, 0, -1):
                dz = (dz @ weights[k].T) * slopes[k - 1]
                grad_W[k - 1][...] = hs[k - 1].T @ dz
                grad_b[k - 1][...] = dz.sum(axis=0)
            return grad

        return scores, vjp

    def forward(self, theta: np.ndarray) -> tuple[np.ndarray, Vjp]:
        return self._run(theta, self.X, None, True)

    def train_forward(self, theta: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, Vjp]:
        return self._run(theta, self.X, rng, True)

    def scores(self, theta: np.ndarray) -> np.ndarray:
        n = self.X.shape[0]
        if n <= SCORE_CHUNK:
            return self._run(theta, self.X, None, False)[0]
        return np.concatenate([self._run(theta, rows, None, False)[0] for rows in row_chunks(self.X, SCORE_CHUNK)])

    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        weights, biases = self.split(self.check(theta))
        parts: dict[str, Any] = {"weights": [W.tolist() for W in weights], "biases": [b.tolist() for b in biases]}
        if self.scorer.input_norm == "batch":
            parts.update(self.scorer.input_stats)
        return parts


class MLPScorer(Scorer):
    """See the module docstring. ``hidden``: the hidden layer sizes (may be empty: a linear
    scorer with a bias); ``input_stats``: the ``"batch"`` norm's saved ``input_mean`` and
    ``input_scale`` (None: taken from the first split bound)."""

    name = "mlp"
    parameters = PARAMETERS

    def __init__(self, hidden=tuple(DEFAULTS["hidden"]), activation: str = DEFAULTS["activation"],
                 dropout: float = DEFAULTS["dropout"], input_norm: str | None = DEFAULTS["input_norm"],
                 input_stats: dict | None = None, input_transform: str = DEFAULTS["input_transform"],
                 input_noise: float = DEFAULTS["input_noise"]) -> None:
        # the settings are checked against PARAMETERS by the ranker that builds the scorer
        self.hidden = tuple(hidden)
        self.activation, self.dropout, self.input_norm = activation, dropout, input_norm
        self.input_transform, self.input_noise = input_transform, input_noise
        self.input_stats = None if input_stats is None else {
            "input_mean": list(input_stats["input_mean"]), "input_scale": list(input_stats["input_scale"])}

    def bind(self, data) -> BoundMLP:
        self.check_kind(data)
        return BoundMLP(data.X, self)  # transformed a batch or chunk at a time, as it runs

    def pack(self, parts: dict[str, Any]) -> np.ndarray:
        weights = [np.asarray(W, dtype=np.float64) for W in parts["weights"]]
        biases = [np.asarray(b, dtype=np.float64) for b in parts["biases"]]
        sizes = [W.shape for W in weights]
        expected = len(self.hidden) + 1
        if len(weights) != expected or len(biases) != expected or any(W.ndim != 2 for W in weights) \
                or [s[1] for s in sizes] != [*self.hidden, 1] or [len(b) for b in biases] != [*self.hidden, 1]:
            raise ValueError(f"saved MLP layers {sizes} do not match hidden={list(self.hidden)}")
        return np.concatenate([W.ravel() for W in weights] + [b.ravel() for b in biases])

    def feature_shape(self, parts: dict[str, Any]) -> tuple[int, ...]:
        return (len(parts["weights"][0]),)
