"""Tran et al.'s rank functionals on the separate question/answer representation (Eqs. 2-3)."""

from __future__ import annotations

import numpy as np

from rankstudy.losses.registry import LOSSES, bind_loss, loss_entry
from rankstudy.util.params import Choice, Integer, Mapping, Real
from rankstudy.rankers.scored import ScoredRanker, loss_options_error
from rankstudy.scorers.separate import ACTIVATIONS, SEPARATE_FUNCTIONALS, SeparateScorer
from rankstudy.solvers.registry import SOLVERS, SolverSettings, default_solver, make_solver


class SeparateRanker(ScoredRanker):
    """Learns A (d x k1) and B (d x k2) of the functional f1 or f2
    (:class:`~rankstudy.scorers.separate.SeparateScorer`) on a ranking loss + l2/2 ||[A, B]||^2,
    on question-answer data (:class:`rankstudy.data.qadata.QAData`).

    * ``activation`` ("tanh" or "sigmoid") applies to f1, ``tau`` > 0 to f2.
    * ``loss``: a name of :mod:`rankstudy.losses.registry` (``multiclass_logistic`` is Tran's
      Eq. 5, pairwise logistic is ``ranknet``); ``loss_params`` are its keyword options (they
      override ``seed`` for a loss that takes one).
    * Start point: A, B ~ N(0, init_scale^2) from ``seed`` (f1 and f2 are not convex in (A, B)
      and [A, B] = 0 is a stationary point of both).
    """

    kind = "separate"
    parameter_constraints = {
        "functional": [Choice(SEPARATE_FUNCTIONALS, "functional")], "activation": [Choice(ACTIVATIONS, "activation")],
        "d": [Integer(1)], "tau": [Real(0, low_open=True)], "loss": [Choice(lambda: sorted(LOSSES), "loss")],
        "loss_params": [None, Mapping()], "l2": [Real(0)], "max_iter": [Integer(1)], "seed": [Integer()],
        "tol": [Real(0)], "init_scale": [Real(0, low_open=True)], "solver": [None, Choice(lambda: sorted(SOLVERS), "solver")],
    }
    data_kind = "qa"
    featureset_types = ("first",)

    def __init__(self, functional: str = "f1", activation: str = "tanh", d: int = 10, tau: float = 1.0,
                 loss: str = "multiclass_logistic", loss_params: dict | None = None, l2: float = 1e-3,
                 max_iter: int = 200, seed: int = 0, tol: float = 1e-6, init_scale: float = 0.1,
                 solver: str | None = None) -> None:
        super().__init__()
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
        self.solver = solver or default_solver(loss_entry(loss), l2=l2, linear=False)  # f1, f2: not linear in (A, B)

    @classmethod
    def check_combination(cls, params: dict) -> None:
        loss_options_error(params["loss"], params["loss_params"])

    def make_scorer(self) -> SeparateScorer:
        return SeparateScorer(self.functional, self.activation, self.d, self.tau, self.init_scale)

    def make_loss(self):
        return bind_loss(self.loss, self.loss_params, seed=self.seed)

    def make_solver(self):
        return make_solver(self.solver, SolverSettings(max_iter=self.max_iter, tol=self.tol, seed=self.seed))

    @property
    def A_(self) -> np.ndarray:
        return np.asarray(self.parts_["A"], dtype=np.float64)

    @property
    def B_(self) -> np.ndarray:
        return np.asarray(self.parts_["B"], dtype=np.float64)
