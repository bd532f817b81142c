"""Rank functionals on the separate query/object representation (Tran et al. 2011, Eqs. 2-3).

A question vector y_q (k1 words) and an answer vector z_o (k2 words) are projected
into one d-dimensional space by A (d x k1) and B (d x k2), then combined:

* ``f1``: sigma(A y_q)' (B z_o), sigma = element-wise sigmoid or tanh (Eq. 2);
* ``f2``: -||A y_q - B z_o||^2 / tau (Eq. 3).

A y_q is computed once per question (sparse @ dense) and repeated over its answers;
gradients come back the same way (segment sums over each question's answers), so no
Python loop ever runs over documents. :class:`SeparateRanker` learns A and B with
L-BFGS on any loss of :mod:`rankstudy.losses` plus l2/2 ||[A, B]||^2.
"""

from __future__ import annotations

import inspect
from functools import partial
from typing import Callable

import numpy as np

from rankstudy.data import padded_layout
from rankstudy.loss_registry import get_loss
from rankstudy.qa import QAData
from rankstudy.rankers import NotFittedError, Ranker, _check_loss_options, minimize_lbfgs

SEPARATE_FUNCTIONALS = ("f1", "f2")
ACTIVATIONS = ("sigmoid", "tanh")

# A VJP maps dL/dscores (n,) to (dL/dP (Q, d), dL/dR (n, d)), P = Y A', R = Z B'
Backward = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


# --------------------------------------------------------------------------- functionals

def _activation(name: str, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sigma(x) and sigma'(x)."""
    if name == "tanh":
        h = np.tanh(x)
        return h, 1.0 - h * h
    if name == "sigmoid":
        h = 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free logistic
        return h, h * (1.0 - h)
    raise ValueError(f"unknown activation {name!r}; valid activations: {', '.join(ACTIVATIONS)}")


def f1(P: np.ndarray, R: np.ndarray, lengths: np.ndarray, activation: str = "tanh") -> tuple[np.ndarray, Backward]:
    """Eq. 2 for all answers: s_o = sigma(P_q) . R_o with P = Y A' (per question) and
    R = Z B' (per answer); ``lengths`` are the answers per question."""
    H, dH = _activation(activation, P)
    H_rows = np.repeat(H, lengths, axis=0)
    scores = np.einsum("nd,nd->n", H_rows, R)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])

    def backward(grad_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        grad_R = grad_scores[:, None] * H_rows
        grad_H = np.add.reduceat(grad_scores[:, None] * R, starts, axis=0)  # every question has answers
        return grad_H * dH, grad_R

    return scores, backward


def f2(P: np.ndarray, R: np.ndarray, lengths: np.ndarray, tau: float = 1.0) -> tuple[np.ndarray, Backward]:
    """Eq. 3 for all answers: s_o = -||P_q - R_o||^2 / tau."""
    diff = np.repeat(P, lengths, axis=0) - R
    scores = -np.einsum("nd,nd->n", diff, diff) / tau
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])

    def backward(grad_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        grad_diff = grad_scores[:, None] * (-2.0 / tau) * diff  # d s / d P_q = -2 diff / tau = -d s / d R_o
        return np.add.reduceat(grad_diff, starts, axis=0), -grad_diff

    return scores, backward


def separate_scores(data: QAData, A: np.ndarray, B: np.ndarray, functional: str = "f1",
                    activation: str = "tanh", tau: float = 1.0) -> tuple[np.ndarray, Backward]:
    """Scores of every answer of ``data`` and the VJP back to (dL/dP, dL/dR)."""
    P = np.asarray(data.query_vectors @ A.T)  # (Q, d): once per question
    R = np.asarray(data.object_vectors @ B.T)  # (n, d)
    if functional == "f1":
        return f1(P, R, data.query_lengths, activation)
    if functional == "f2":
        return f2(P, R, data.query_lengths, tau)
    raise ValueError(f"unknown functional {functional!r}; valid functionals: {', '.join(SEPARATE_FUNCTIONALS)}")


# --------------------------------------------------------------------------- loss

def resolve_loss(name: str):
    """Any loss of the registry (e.g. ``multiclass_logistic``, Tran Eq. 5, ``smoothed_mrr``, ``ranknet``)."""
    return get_loss(name)


# --------------------------------------------------------------------------- objective

class SeparateObjective:
    """f(theta) = loss(pad(scores)) + l2/2 ||theta||^2, theta = [A.ravel(), B.ravel()].
    Padding layout, padded labels and mask are built once here, not per call."""

    def __init__(self, data: QAData, loss, l2: float, d: int, functional: str,
                 activation: str, tau: float) -> None:
        self.data = data
        self.loss = loss
        self.l2 = float(l2)
        self.d = int(d)
        self.functional, self.activation, self.tau = functional, activation, float(tau)
        self.k1 = data.query_vectors.shape[1]
        self.k2 = data.object_vectors.shape[1]
        # the same layout as data.pad, built once
        self.shape, self.flat, self.mask, self.labels = padded_layout(data.offsets, data.y)
        # transposes built once: sparse.T @ dense is the gradient's hot product
        self.query_vectors_T = data.query_vectors.T.tocsr()
        self.object_vectors_T = data.object_vectors.T.tocsr()
        self.last_theta: np.ndarray | None = None
        self.last_loss = np.nan

    @property
    def n_params(self) -> int:
        return self.d * (self.k1 + self.k2)

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        split = self.d * self.k1
        return theta[:split].reshape(self.d, self.k1), theta[split:].reshape(self.d, self.k2)

    def data_loss(self, theta: np.ndarray) -> float:
        """Loss term alone (no penalty); reuses the last evaluation when theta matches."""
        if self.last_theta is None or not np.array_equal(theta, self.last_theta):
            self(theta, need_grad=False)
        return self.last_loss

    def __call__(self, theta: np.ndarray, need_grad: bool = True):
        theta = np.asarray(theta, dtype=np.float64)
        A, B = self.unpack(theta)
        scores, backward = separate_scores(self.data, A, B, self.functional, self.activation, self.tau)
        padded = np.zeros(self.shape)
        padded.flat[self.flat] = scores
        value, grad_padded = self.loss(padded, self.labels, self.mask)
        self.last_theta, self.last_loss = theta.copy(), value
        objective = value + 0.5 * self.l2 * float(theta @ theta)
        if not need_grad:
            return objective, None
        grad_P, grad_R = backward(grad_padded.ravel()[self.flat])
        grad_A = (self.query_vectors_T @ grad_P).T  # (d, k1)
        grad_B = (self.object_vectors_T @ grad_R).T  # (d, k2)
        grad = np.concatenate([np.ravel(grad_A), np.ravel(grad_B)]) + self.l2 * theta
        return objective, grad


# --------------------------------------------------------------------------- ranker

class SeparateRanker(Ranker):
    """Learns A (d x k1) and B (d x k2) of the functional f1 or f2 (Tran Eqs. 2-3) with
    L-BFGS-B on a ranking loss + l2/2 ||[A, B]||^2, on :class:`rankstudy.qa.QAData`.

    * ``activation`` ("tanh" or "sigmoid") applies to f1, ``tau`` > 0 to f2.
    * ``loss``: a name of :data:`rankstudy.losses.LOSSES` (``multiclass_logistic``, Eq. 5,
      falls back to a local implementation when the registry lacks it; pairwise logistic
      is ``ranknet``); ``loss_params`` are its keyword options (they override ``seed``
      for a loss that takes one).
    * Start point: A, B ~ N(0, init_scale^2) from ``seed``. f1 and f2 are not convex in
      (A, B) and [A, B] = 0 is a stationary point of both, so the start must be random.

    History: one dict per L-BFGS iteration (step 0 = the start point) with ``objective``
    (loss + penalty), ``train_loss`` and, when vali is given, ``vali_loss``.
    """

    kind = "separate"

    def __init__(self, functional: str = "f1", activation: str = "tanh", d: int = 10, tau: float = 1.0,
                 loss: str = "multiclass_logistic", loss_params: dict | None = None, l2: float = 1e-3,
                 max_iter: int = 200, seed: int = 0, tol: float = 1e-6, init_scale: float = 0.1) -> None:
        super().__init__()
        # fail at construction on unknown names or impossible settings
        if functional not in SEPARATE_FUNCTIONALS:
            raise ValueError(f"unknown functional {functional!r}; "
                             f"valid functionals: {', '.join(SEPARATE_FUNCTIONALS)}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; valid activations: {', '.join(ACTIVATIONS)}")
        if int(d) < 1 or int(d) != d:
            raise ValueError(f"d must be a positive integer, got {d!r}")
        if not tau > 0:
            raise ValueError(f"tau must be > 0, got {tau!r}")
        if not init_scale > 0:
            raise ValueError(f"init_scale must be > 0, got {init_scale!r}")
        _check_loss_options(loss, resolve_loss(loss), loss_params or {})
        self.functional = functional
        self.activation = activation
        self.d = d
        self.tau = tau
        self.loss = loss
        self.loss_params = None if loss_params is None else dict(loss_params)
        self.l2 = l2
        self.max_iter = max_iter
        self.seed = seed
        self.tol = tol
        self.init_scale = init_scale

    def loss_function(self):
        fn = resolve_loss(self.loss)
        options = {}
        if "seed" in inspect.signature(fn).parameters:
            options["seed"] = self.seed
        options.update(self.loss_params or {})
        return partial(fn, **options) if options else fn

    def objective(self, data: QAData) -> SeparateObjective:
        return SeparateObjective(data, self.loss_function(), self.l2, self.d, self.functional,
                                 self.activation, self.tau)

    def initial_theta(self, k1: int, k2: int) -> np.ndarray:
        return np.random.default_rng(self.seed).normal(0.0, self.init_scale, int(self.d) * (k1 + k2))

    def fit(self, train: QAData, vali: QAData | None = None) -> "SeparateRanker":
        train_obj = self.objective(train)
        if vali is not None:
            self._check_dims(vali, train_obj.k1, train_obj.k2)
        vali_obj = self.objective(vali) if vali is not None else None
        result, history = minimize_lbfgs(train_obj, self.initial_theta(train_obj.k1, train_obj.k2), vali_obj,
                                         tol=self.tol, max_iter=self.max_iter)
        A, B = train_obj.unpack(np.asarray(result.x, dtype=np.float64))
        self.A_, self.B_ = A.copy(), B.copy()
        self.n_iter_ = int(result.nit)
        self.n_fev_ = int(result.nfev)
        self.converged_ = bool(result.success)
        self.history_ = history
        return self

    @staticmethod
    def _check_dims(data: QAData, k1: int, k2: int) -> None:
        got = (data.query_vectors.shape[1], data.object_vectors.shape[1])
        if got != (k1, k2):
            raise ValueError(f"expected {k1} question and {k2} answer features, got {got[0]} and {got[1]}")

    def predict(self, data: QAData) -> np.ndarray:
        if not hasattr(self, "A_"):
            raise NotFittedError("SeparateRanker is not fitted")
        self._check_dims(data, self.A_.shape[1], self.B_.shape[1])
        scores, _ = separate_scores(data, self.A_, self.B_, self.functional, self.activation, self.tau)
        return scores

    def _get_state(self) -> dict:
        return {"A": self.A_.tolist(), "B": self.B_.tolist(), "n_iter": self.n_iter_,
                "n_fev": self.n_fev_, "converged": self.converged_}

    def _set_state(self, state: dict) -> None:
        A = np.asarray(state["A"], dtype=np.float64)
        B = np.asarray(state["B"], dtype=np.float64)
        if A.ndim != 2 or B.ndim != 2 or A.shape[0] != self.d or B.shape[0] != self.d:
            raise ValueError(f"saved A {A.shape} and B {B.shape} do not have d={self.d} rows")
        self.A_, self.B_ = A, B
        self.n_iter_ = int(state["n_iter"])
        self.n_fev_ = int(state["n_fev"])
        self.converged_ = bool(state["converged"])
