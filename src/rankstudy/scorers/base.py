"""The scorer protocol: a scoring function f(x; theta) over one kind of split, with its
parameters theta as one flat float64 vector, so that any solver can train it on any loss.

A :class:`Scorer` is a small object whose settings are plain data. ``bind(data)`` does the
per-split work once (transposes, pair blocks) and returns a :class:`BoundScorer`:

* ``n_params``, and ``n_penalized``: the L2 penalty covers ``theta[:n_penalized]`` (a bias,
  if any, comes last and is not penalised);
* ``forward(theta) -> (scores, vjp)``: the scores of every row of the split, in row order,
  and the vector-Jacobian product ``vjp(g) = d(sum_n g_n scores_n) / d theta``;
* ``unpack(theta) -> dict``: named parts of theta as JSON data (what a model file holds);
  :meth:`Scorer.pack` is its inverse;
* ``rows(rows)``: the same scorer on a subset of the rows (stochastic solvers go query by
  query), and ``nonnegative``: whether theta must stay >= 0;
* ``train_forward(theta, rng)``: ``forward`` in training mode, for a scorer with randomness in
  training (dropout) drawn from ``rng``; ``forward`` itself stays deterministic. By default the
  same as ``forward``.

A new scorer is one class of this interface; a ranker uses it by building it in its
``make_scorer`` (:class:`rankstudy.rankers.scored.ScoredRanker`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

Vjp = Callable[[np.ndarray], np.ndarray]


class BoundScorer:
    n_params: int
    n_penalized: int
    nonnegative: bool = False  # whether the parameters must stay >= 0 (a constrained solver keeps them)

    def forward(self, theta: np.ndarray) -> tuple[np.ndarray, Vjp]:
        raise NotImplementedError

    def train_forward(self, theta: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, Vjp]:
        """``forward`` in training mode (randomness, such as dropout, drawn from ``rng``)."""
        return self.forward(theta)

    def scores(self, theta: np.ndarray) -> np.ndarray:
        return self.forward(theta)[0]

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        """Start point of training: zeros (convex in theta after any convex loss)."""
        return np.zeros(self.n_params)

    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        raise NotImplementedError

    def rows(self, rows: np.ndarray) -> "BoundScorer":
        """The same scorer on a subset of the bound rows (for stochastic solvers)."""
        raise NotImplementedError(f"{type(self).__name__} cannot score a subset of its rows")

    def check(self, theta: np.ndarray) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.n_params,):
            raise ValueError(f"{type(self).__name__}: theta has shape {theta.shape}, expected ({self.n_params},)")
        return theta


class Scorer:
    """Base class; subclasses set ``name`` and ``data_kind`` and implement ``bind``, ``pack``."""

    name: ClassVar[str] = ""
    data_kind: ClassVar[str] = "letor"  # the split kind it scores (rankstudy.data.kinds)
    # scores linear in theta: a convex loss then stays convex in theta (the cutting-plane solver's need)
    linear_in_params: ClassVar[bool] = False

    def bind(self, data) -> BoundScorer:
        raise NotImplementedError

    def pack(self, parts: dict[str, Any]) -> np.ndarray:
        """Inverse of ``BoundScorer.unpack``: theta from its named parts."""
        raise NotImplementedError

    def feature_shape(self, parts: dict[str, Any]) -> tuple[int, ...]:
        """The ``feature_shape`` of the data a theta with these named parts scores."""
        raise NotImplementedError

    def check_kind(self, data) -> None:
        if data.kind != self.data_kind:
            raise ValueError(f"the {self.name} scorer scores {self.data_kind!r} data, got a {data.kind!r} split")
