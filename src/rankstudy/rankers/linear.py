"""The linear (or quadratic) ranker: Tran et al.'s rank functionals trained on any loss."""

from __future__ import annotations

import numpy as np

from rankstudy.features.featuresets import FeatureSet
from rankstudy.features.pairs import check_pairs
from rankstudy.losses.groups import GROUP_AGGREGATES
from rankstudy.losses.registry import LOSSES, bind_loss, loss_entry
from rankstudy.util.params import Choice, Integer, Listing, Mapping, ParamError, Real
from rankstudy.rankers.scored import ScoredRanker, loss_options_error
from rankstudy.scorers.linear import LinearScorer
from rankstudy.scorers.quadratic import QuadraticScorer
from rankstudy.solvers.registry import SOLVERS, SolverSettings, default_solver, make_solver

FUNCTIONALS = ("linear", "quadratic")


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
    parameter_constraints = {
        "loss": [Choice(lambda: sorted(LOSSES), "loss")], "l2": [Real(0)], "max_iter": [Integer(1)], "tol": [Real(0)],
        "seed": [Integer()], "loss_params": [None, Mapping()], "group": [None, Choice(GROUP_AGGREGATES, "group")],
        "functional": [Choice(FUNCTIONALS, "functional")],
        "pairs": [None, Listing(what="a list of [i, j] feature index pairs")], "chunk_rows": [Integer(1)],
        "solver": [None, Choice(lambda: sorted(SOLVERS), "solver")],
    }

    def __init__(self, loss: str = "ranknet", l2: float = 1e-3, max_iter: int = 200,
                 tol: float = 1e-6, seed: int = 0, loss_params: dict | None = None,
                 group: str | None = None, functional: str = "linear",
                 pairs: list[list[int]] | None = None, chunk_rows: int = 8192,
                 solver: str | None = None) -> None:
        super().__init__()
        self.loss = loss
        self.l2 = l2
        self.max_iter = max_iter
        self.tol = tol
        self.seed = seed
        self.loss_params = None if loss_params is None else dict(loss_params)
        self.group = group
        self.functional = functional
        # kept as plain lists so get_params() stays JSON data
        self.pairs = None if pairs is None else check_pairs(pairs).tolist()
        self.chunk_rows = chunk_rows
        self.solver = solver or default_solver(loss_entry(loss), l2=l2)

    @classmethod
    def check_combination(cls, params: dict) -> None:
        loss_options_error(params["loss"], params["loss_params"])
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

    def make_solver(self):
        return make_solver(self.solver, SolverSettings(max_iter=self.max_iter, tol=self.tol, seed=self.seed))

    @property
    def coef_(self) -> np.ndarray:
        return np.asarray(self.parts_["coef"], dtype=np.float64)

    @property
    def pair_coef_(self) -> np.ndarray:
        return np.asarray(self.parts_.get("pair_coef", []), dtype=np.float64)

    @property
    def intercept_(self) -> float:
        return float(self.parts_["intercept"])
