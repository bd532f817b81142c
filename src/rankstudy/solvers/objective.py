"""The training objective of a scorer on one split: the loss over padded queries plus an L2
penalty (a Gaussian prior),

    f(theta) = loss(pad(scores(theta)), labels, mask) + l2/2 ||theta[:n_penalized]||^2,

with its gradient through the scorer's vector-Jacobian product. The padding layout, padded
labels and mask are built once here, not per call.
"""

from __future__ import annotations

import numpy as np

from rankstudy.data.blocks import padded_layout
from rankstudy.losses.padded import LossFn
from rankstudy.scorers.base import BoundScorer


class Objective:
    """``objective(theta) -> (value, grad)`` (``grad`` None when ``need_grad`` is false)."""

    def __init__(self, scorer: BoundScorer, loss: LossFn, data, l2: float) -> None:
        self.scorer = scorer
        self.loss = loss
        self.l2 = float(l2)
        self.shape, self.flat, self.mask, self.labels = padded_layout(data.offsets, data.y)
        self.last_theta: np.ndarray | None = None
        self.last_loss = np.nan

    @property
    def n_params(self) -> int:
        return self.scorer.n_params

    def data_loss(self, theta: np.ndarray) -> float:
        """Loss term alone (no penalty); reuses the last evaluation when theta matches."""
        if self.last_theta is None or not np.array_equal(theta, self.last_theta):
            self(theta, need_grad=False)
        return self.last_loss

    def risk(self, theta: np.ndarray, need_grad: bool = True):
        """The loss alone (no penalty) and its (sub)gradient in theta."""
        theta = np.asarray(theta, dtype=np.float64)
        scores, vjp = self.scorer.forward(theta)
        padded = np.zeros(self.shape)
        padded.flat[self.flat] = scores
        value, grad_padded = self.loss(padded, self.labels, self.mask)
        self.last_theta, self.last_loss = theta.copy(), value
        return value, (vjp(grad_padded.ravel()[self.flat]) if need_grad else None)

    def __call__(self, theta: np.ndarray, need_grad: bool = True):
        theta = np.asarray(theta, dtype=np.float64)
        value, grad = self.risk(theta, need_grad)
        k = self.scorer.n_penalized
        w = theta[:k]
        objective = value + 0.5 * self.l2 * float(w @ w)
        if not need_grad:
            return objective, None
        grad[:k] += self.l2 * w
        return objective, grad
