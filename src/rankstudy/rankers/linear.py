"""The linear (or quadratic) ranker: Tran et al.'s rank functionals trained on any loss."""

from __future__ import annotations

import numpy as np

from rankstudy.features.featuresets import FeatureSet
from rankstudy.losses.groups import GROUP_AGGREGATES
from rankstudy.losses.registry import LOSSES, bind_loss, loss_entry
from rankstudy.util.params import (SEED, Choice, Constraint, Integer, Listing, LogUniform, Mapping, Param, ParamError,
                                   Real)
from rankstudy.rankers.scored import ScoredRanker, loss_options_error, solver_params_error
from rankstudy.scorers.linear import LinearScorer
from rankstudy.scorers.quadratic import PARAMETERS as QUADRATIC_PARAMETERS, QuadraticScorer
from rankstudy.solvers import settings
from rankstudy.solvers.registry import SOLVERS

FUNCTIONALS = ("linear", "quadratic")


class FeaturePair(Constraint):
    """[i, j]: two 0-based feature indices, one product of the quadratic functional."""

    def accepts(self, value) -> bool:
        return isinstance(value, list | tuple) and len(value) == 2 and all(Integer(0).accepts(i) for i in value)

    def describe(self) -> str:
        return "a pair [i, j] of feature indices >= 0"


class LinearRanker(ScoredRanker):
    """Linear (or quadratic) scoring function trained on a ranking loss + l2/2 ||theta||^2.

    * ``functional="linear"``: score = w'x (:class:`~rankstudy.scorers.linear.LinearScorer`).
      ``functional="quadratic"``: score = w'x + sum_k c_k x_{i_k} x_{j_k} over the 0-based
      feature index ``pairs`` (:class:`~rankstudy.scorers.quadratic.QuadraticScorer`, Tran et
      al. 2011, Eq. 4), evaluated in chunks of ``chunk_rows`` rows; the penalty covers w and c.
    * ``loss``: any name of :mod:`rankstudy.losses.registry`; ``loss_params`` its keyword
      options (they override ``seed`` for a loss that takes one).
    * ``group``: one of :data:`rankstudy.losses.groups.GROUP_AGGREGATES` to train on label-tie
      groups; prediction still scores each document.
    * ``solver``: a name of :mod:`rankstudy.solvers.registry` that fits the loss (``lbfgs``
      for smooth losses; ``cutting_plane`` for convex ones without a bias; ``projected_sgd``),
      run with ``max_iter`` and ``tol``; by default the first of these that fits the loss.

    A bias is fitted for the losses whose registry entry needs one (``bias``: the regression
    losses compare scores with labels). ``seed``
    drives the label tie-break of the Plackett-Luce losses; training starts at theta = 0 (all
    losses are convex in the scores and both functionals are linear in theta).
    """

    kind = "linear"
    featureset_types = ("first", "rho", "quad")
    parameters = {
        "loss": Param(Choice(lambda: sorted(LOSSES), "loss"), "ranknet"),
        "l2": Param(Real(0), 1e-3, space=LogUniform(1e-6, 10.0), help="the L2 penalty l2/2 ||theta||^2"),
        "max_iter": settings.LBFGS["max_iter"],
        "tol": settings.LBFGS["tol"],
        "seed": SEED,
        "loss_params": Param([None, Mapping()], None),
        "group": Param([None, Choice(GROUP_AGGREGATES, "group")], None),
        "functional": Param(Choice(FUNCTIONALS, "functional"), "linear"),
        "pairs": Param([None, Listing(FeaturePair(), what="a list of [i, j] feature index pairs")], None),
        "chunk_rows": QUADRATIC_PARAMETERS["chunk_rows"],  # the quadratic scorer's declaration
        "solver": Param([None, Choice(lambda: sorted(SOLVERS), "solver")], None,
                        help="null: the first solver that fits the loss"),
        "solver_params": Param([None, Mapping()], None,
                               help="the solver's own settings by name, e.g. {learning_rate: 0.01} for adam"),
    }

    @classmethod
    def check_combination(cls, params: dict) -> None:
        loss_options_error(params["loss"], params["loss_params"])
        solver_params_error(cls.resolved_solver(params), params["solver_params"])
        if params["functional"] == "quadratic" and params["pairs"] is None:
            raise ParamError("pairs", "functional='quadratic' needs pairs (a list of [i, j] feature index pairs)")
        if params["functional"] == "linear" and params["pairs"] is not None:
            raise ParamError("pairs", "pairs only apply to functional='quadratic'")

    @classmethod
    def featureset_params(cls, featureset: FeatureSet, pairs: list[list[int]]) -> dict:
        # quad feature sets leave the selected products to the quadratic functional
        return {"functional": "quadratic", "pairs": pairs} if featureset.quadratic else {}

    @property
    def fit_intercept(self) -> bool:
        return loss_entry(self.loss).bias

    def make_scorer(self) -> LinearScorer:
        if self.functional == "quadratic":
            return QuadraticScorer(self.pairs, intercept=self.fit_intercept, chunk_rows=self.chunk_rows)
        return LinearScorer(intercept=self.fit_intercept)

    def make_loss(self):
        return bind_loss(self.loss, self.loss_params, seed=self.seed, group=self.group)

    @property
    def coef_(self) -> np.ndarray:
        return np.asarray(self.parts_["coef"], dtype=np.float64)

    @property
    def pair_coef_(self) -> np.ndarray:
        return np.asarray(self.parts_.get("pair_coef", []), dtype=np.float64)

    @property
    def intercept_(self) -> float:
        return float(self.parts_["intercept"])
