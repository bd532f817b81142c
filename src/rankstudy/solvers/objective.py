"""The training objective of a scorer on one split: the loss over padded queries plus an L2
penalty (a Gaussian prior),

    f(theta) = loss(pad(scores(theta)), labels, mask) + l2/2 ||theta[:n_penalized]||^2,

with its gradient through the scorer's vector-Jacobian product. The padding layout, padded
labels and mask are built once here, not per call.

A loss may have parameters of its own (``n_params`` > 0, e.g. a CDN's weights, called as
``loss(scores, labels, mask, params) -> (value, d/dscores, d/dparams)``): they follow the
scorer's in theta and are not penalised.

A minibatch solver takes the objective on some documents of some queries (:meth:`Objective.batch`)
and evaluates it in the scorer's training mode (``rng``: dropout masks drawn from it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankstudy.data.blocks import padded_layout
from rankstudy.losses.padded import LossFn
from rankstudy.scorers.base import BoundScorer


@dataclass(frozen=True)
class Batch:
    """The labels and query grouping of a minibatch: all an objective needs of its split."""

    y: np.ndarray
    offsets: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.offsets) - 1


class Objective:
    """``objective(theta) -> (value, grad)`` (``grad`` None when ``need_grad`` is false)."""

    def __init__(self, scorer: BoundScorer, loss: LossFn, data, l2: float) -> None:
        self.scorer = scorer
        self.loss = loss
        self.data = data
        self.l2 = float(l2)
        self.n_loss_params = int(getattr(loss, "n_params", 0))
        self.shape, self.flat, self.mask, self.labels = padded_layout(data.offsets, data.y)
        self.last_theta: np.ndarray | None = None
        self.last_loss = np.nan
        self._scored: tuple[np.ndarray, np.ndarray] | None = None  # (scorer's theta, its scores), the last

    @property
    def n_params(self) -> int:
        return self.scorer.n_params + self.n_loss_params

    @property
    def nonnegative(self) -> np.ndarray:
        """Which parameters must stay >= 0 (for constrained solvers)."""
        return np.concatenate([np.full(self.scorer.n_params, bool(getattr(self.scorer, "nonnegative", False))),
                               np.full(self.n_loss_params, bool(getattr(self.loss, "nonnegative", False)))])

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        parts = [self.scorer.initial(rng)]
        if self.n_loss_params:
            parts.append(self.loss.initial(rng))
        return np.concatenate(parts)

    def unpack(self, theta: np.ndarray) -> dict:
        """The scorer's named parts, plus ``loss_params`` when the loss has parameters."""
        k = self.scorer.n_params
        parts = self.scorer.unpack(theta[:k])
        if self.n_loss_params:
            parts["loss_params"] = np.asarray(theta[k:], dtype=np.float64).tolist()
        return parts

    def for_queries(self, queries: np.ndarray) -> "Objective":
        """The same objective on a subset of the queries (indices into the split). It holds
        their labels and grouping, not a copy of their features (a solver may hold one per
        query of a large split)."""
        keep = np.zeros(self.data.n_queries, dtype=bool)
        keep[np.asarray(queries)] = True
        rows, offsets = self.data.query_rows(keep)
        return self.batch(np.flatnonzero(rows), offsets)

    def batch(self, rows: np.ndarray, offsets: np.ndarray) -> "Objective":
        """The same objective on the rows ``rows`` of the split, grouped into queries by
        ``offsets`` (each query's rows contiguous: a subset of its documents, in any order)."""
        rows = np.asarray(rows)
        return Objective(self.scorer.rows(rows), self.loss, Batch(np.asarray(self.data.y)[rows], offsets), self.l2)

    def scores(self, theta: np.ndarray) -> np.ndarray:
        """The split's scores at ``theta`` in prediction mode (read only). The last ones are kept:
        a solver that records the validation metric and the validation loss of one theta scores
        the split once (an MLP's forward pass over the split is most of a small epoch's CPU)."""
        theta = np.asarray(theta, dtype=np.float64)[:self.scorer.n_params]
        if self._scored is None or not np.array_equal(theta, self._scored[0]):
            scores = self.scorer.scores(theta)
            scores.flags.writeable = False
            self._scored = (theta.copy(), scores)
        return self._scored[1]

    def data_loss(self, theta: np.ndarray) -> float:
        """Loss term alone (no penalty); reuses the last evaluation when theta matches."""
        if self.last_theta is None or not np.array_equal(theta, self.last_theta):
            self(theta, need_grad=False)
        return self.last_loss

    def risk(self, theta: np.ndarray, need_grad: bool = True, rng: np.random.Generator | None = None):
        """The loss alone (no penalty) and its (sub)gradient in theta; with ``rng``, the
        scorer runs in training mode (``train_forward``)."""
        theta = np.asarray(theta, dtype=np.float64)
        k = self.scorer.n_params
        if not need_grad and rng is None:
            # prediction mode: a scorer may score in chunks (an MLP's hidden layers for every
            # row of a large split would hold n x width floats at once)
            scores, vjp = self.scores(theta), None
        elif rng is None:
            scores, vjp = self.scorer.forward(theta[:k])
        else:
            scores, vjp = self.scorer.train_forward(theta[:k], rng)
        padded = np.zeros(self.shape)
        padded.ravel()[self.flat] = scores  # a view of the new array; much faster than .flat[]
        if self.n_loss_params:
            value, grad_padded, grad_loss = self.loss(padded, self.labels, self.mask, theta[k:])
        else:
            value, grad_padded = self.loss(padded, self.labels, self.mask)
        self.last_theta, self.last_loss = theta.copy(), value
        if not need_grad:
            return value, None
        grad = vjp(np.take(grad_padded, self.flat))  # flat indices into the (Q, L) gradient
        return value, (np.concatenate([grad, grad_loss]) if self.n_loss_params else grad)

    def __call__(self, theta: np.ndarray, need_grad: bool = True, rng: np.random.Generator | None = None):
        theta = np.asarray(theta, dtype=np.float64)
        value, grad = self.risk(theta, need_grad, rng)
        k = self.scorer.n_penalized
        w = theta[:k]
        objective = value + 0.5 * self.l2 * float(w @ w)
        if not need_grad:
            return objective, None
        grad[:k] += self.l2 * w
        return objective, grad
