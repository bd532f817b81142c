"""Tran et al.'s rank functionals on the separate question/answer representation (Eqs. 2-3)."""

from __future__ import annotations

import numpy as np

from rankstudy.losses.registry import LOSSES, bind_loss
from rankstudy.util.params import SEED, Choice, LogUniform, Mapping, Param, Real
from rankstudy.rankers.scored import ScoredRanker, loss_options_error, solver_params_error
from rankstudy.scorers.separate import PARAMETERS as SCORER_PARAMETERS, SeparateScorer
from rankstudy.solvers import settings
from rankstudy.solvers.registry import SOLVERS


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
    # the scorer's settings are its declarations (scorers/separate.py), in the order the parameters always had
    parameters = {
        **{name: SCORER_PARAMETERS[name] for name in ("functional", "activation", "d", "tau")},
        "loss": Param(Choice(lambda: sorted(LOSSES), "loss"), "multiclass_logistic"),
        "loss_params": Param([None, Mapping()], None),
        "l2": Param(Real(0), 1e-3, space=LogUniform(1e-6, 10.0)),
        "max_iter": settings.LBFGS["max_iter"],
        "seed": SEED,
        "tol": settings.LBFGS["tol"],
        "init_scale": SCORER_PARAMETERS["init_scale"],
        "solver": Param([None, Choice(lambda: sorted(SOLVERS), "solver")], None,
                        help="null: the first solver that fits the loss"),
        "solver_params": Param([None, Mapping()], None,
                               help="the solver's own settings by name, e.g. {learning_rate: 0.01} for adam"),
    }
    data_kind = "qa"
    linear_scores = False  # f1 and f2 are not linear in (A, B): the default solver is one that needs no linearity
    featureset_types = ("first",)

    @classmethod
    def check_combination(cls, params: dict) -> None:
        loss_options_error(params["loss"], params["loss_params"])
        solver_params_error(cls.resolved_solver(params), params["solver_params"])

    def make_scorer(self) -> SeparateScorer:
        return SeparateScorer(**{name: getattr(self, name) for name in SCORER_PARAMETERS})

    def make_loss(self):
        return bind_loss(self.loss, self.loss_params, seed=self.seed)

    @property
    def A_(self) -> np.ndarray:
        return np.asarray(self.parts_["A"], dtype=np.float64)

    @property
    def B_(self) -> np.ndarray:
        return np.asarray(self.parts_["B"], dtype=np.float64)
