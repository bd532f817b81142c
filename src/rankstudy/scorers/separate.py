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

from typing import Any, Callable

import numpy as np

from rankstudy.data.qadata import QAData
from rankstudy.scorers.activations import activate
from rankstudy.scorers.base import BoundScorer, Scorer, Vjp
from rankstudy.util.params import Choice, Integer, IntRange, LogUniform, Param, Real, defaults

SEPARATE_FUNCTIONALS = ("f1", "f2")
ACTIVATIONS = ("sigmoid", "tanh")  # Tran et al.'s two for f1
# the scorer's settings, declared once: the separate ranker takes them as its parameters and checks them
PARAMETERS = {
    "functional": Param(Choice(SEPARATE_FUNCTIONALS, "functional"), "f1"),
    "activation": Param(Choice(ACTIVATIONS, "activation"), "tanh"),
    "d": Param(Integer(1), 10, space=IntRange(2, 64, log=True), help="columns of A and B"),
    "tau": Param(Real(0, low_open=True), 1.0, space=LogUniform(0.1, 10.0), tune_when={"functional": "f2"}),
    "init_scale": Param(Real(0, low_open=True), 0.1),
}
DEFAULTS = defaults(PARAMETERS)

# A VJP maps dL/dscores (n,) to (dL/dP (Q, d), dL/dR (n, d)), P = Y A', R = Z B'
Backward = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


# --------------------------------------------------------------------------- functionals


def f1(P: np.ndarray, R: np.ndarray, lengths: np.ndarray,
       activation: str = DEFAULTS["activation"]) -> tuple[np.ndarray, Backward]:
    """Eq. 2 for all answers: s_o = sigma(P_q) . R_o with P = Y A' (per question) and
    R = Z B' (per answer); ``lengths`` are the answers per question."""
    H, dH = activate(activation, P)
    H_rows = np.repeat(H, lengths, axis=0)
    scores = np.einsum("nd,nd->n", H_rows, R)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])

    def backward(grad_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        grad_R = grad_scores[:, None] * H_rows
        grad_H = np.add.reduceat(grad_scores[:, None] * R, starts, axis=0)  # every question has answers
        return grad_H * dH, grad_R

    return scores, backward


def f2(P: np.ndarray, R: np.ndarray, lengths: np.ndarray, tau: float = DEFAULTS["tau"]) -> tuple[np.ndarray, Backward]:
    """Eq. 3 for all answers: s_o = -||P_q - R_o||^2 / tau."""
    diff = np.repeat(P, lengths, axis=0) - R
    scores = -np.einsum("nd,nd->n", diff, diff) / tau
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])

    def backward(grad_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        grad_diff = grad_scores[:, None] * (-2.0 / tau) * diff  # d s / d P_q = -2 diff / tau = -d s / d R_o
        return np.add.reduceat(grad_diff, starts, axis=0), -grad_diff

    return scores, backward


def separate_scores(data: QAData, A: np.ndarray, B: np.ndarray, functional: str = DEFAULTS["functional"],
                    activation: str = DEFAULTS["activation"],
                    tau: float = DEFAULTS["tau"]) -> tuple[np.ndarray, Backward]:
    """Scores of every answer of ``data`` and the VJP back to (dL/dP, dL/dR)."""
    P = np.asarray(data.query_vectors @ A.T)  # (Q, d): once per question
    R = np.asarray(data.object_vectors @ B.T)  # (n, d)
    if functional == "f1":
        return f1(P, R, data.query_lengths, activation)
    if functional == "f2":
        return f2(P, R, data.query_lengths, tau)
    raise ValueError(f"unknown functional {functional!r}; valid functionals: {', '.join(SEPARATE_FUNCTIONALS)}")


# --------------------------------------------------------------------------- scorer

class BoundSeparate(BoundScorer):
    """theta = [A.ravel(), B.ravel()], all penalised."""

    def __init__(self, data: QAData, scorer: "SeparateScorer") -> None:
        self.data = data
        self.scorer = scorer
        self.d = scorer.d
        self.k1 = data.query_vectors.shape[1]
        self.k2 = data.object_vectors.shape[1]
        self.n_params = self.n_penalized = self.d * (self.k1 + self.k2)
        # transposes built once: sparse.T @ dense is the gradient's hot product
        self.query_vectors_T = data.query_vectors.T.tocsr()
        self.object_vectors_T = data.object_vectors.T.tocsr()

    def split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cut = self.d * self.k1
        return theta[:cut].reshape(self.d, self.k1), theta[cut:].reshape(self.d, self.k2)

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        # f1 and f2 are not convex in (A, B) and [A, B] = 0 is a stationary point of both
        return rng.normal(0.0, self.scorer.init_scale, self.n_params)

    def forward(self, theta: np.ndarray) -> tuple[np.ndarray, Vjp]:
        A, B = self.split(theta)
        s = self.scorer
        scores, backward = separate_scores(self.data, A, B, s.functional, s.activation, s.tau)

        def vjp(g: np.ndarray) -> np.ndarray:
            grad_P, grad_R = backward(g)
            grad_A = (self.query_vectors_T @ grad_P).T  # (d, k1)
            grad_B = (self.object_vectors_T @ grad_R).T  # (d, k2)
            return np.concatenate([np.ravel(grad_A), np.ravel(grad_B)])

        return scores, vjp

    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        A, B = self.split(theta)
        return {"A": A.tolist(), "B": B.tolist()}


class SeparateScorer(Scorer):
    """Tran et al.'s f1 or f2 over question-answer data, with d x k1 and d x k2 projections
    A and B; ``activation`` ("tanh" or "sigmoid") applies to f1, ``tau`` > 0 to f2; training
    starts from A, B ~ N(0, init_scale^2)."""

    name = "separate"
    data_kind = "qa"
    parameters = PARAMETERS

    def __init__(self, functional: str = DEFAULTS["functional"], activation: str = DEFAULTS["activation"],
                 d: int = DEFAULTS["d"], tau: float = DEFAULTS["tau"],
                 init_scale: float = DEFAULTS["init_scale"]) -> None:
        # the settings are checked against PARAMETERS by the ranker that builds the scorer
        self.functional, self.activation = functional, activation
        self.d, self.tau, self.init_scale = int(d), float(tau), float(init_scale)

    def bind(self, data: QAData) -> BoundSeparate:
        self.check_kind(data)
        return BoundSeparate(data, self)

    def pack(self, parts: dict[str, Any]) -> np.ndarray:
        A = np.asarray(parts["A"], dtype=np.float64)
        B = np.asarray(parts["B"], dtype=np.float64)
        if A.ndim != 2 or B.ndim != 2 or A.shape[0] != self.d or B.shape[0] != self.d:
            raise ValueError(f"saved A {A.shape} and B {B.shape} do not have d={self.d} rows")
        return np.concatenate([A.ravel(), B.ravel()])

    def feature_shape(self, parts: dict[str, Any]) -> tuple[int, ...]:
        return (len(parts["A"][0]), len(parts["B"][0]))
