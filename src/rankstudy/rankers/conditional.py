"""Conditional models over rankings (Dubey et al. 2009): a linear scorer, w'x, trained on one
of the paper's objectives over phi_po (:mod:`rankstudy.losses.conditional`) plus ||w||^2/(2C),
by L-BFGS on a sample of rankings drawn once per split; the non-convex objectives (ExpGain,
L3) from several starts, the best kept on validation."""

from __future__ import annotations

import numpy as np

from rankstudy.evaluation.metrics import parse_metric
from rankstudy.losses.registry import bind_loss, loss_option_param
from rankstudy.util.params import SEED, Choice, Integer, LogUniform, Param, Real, Text
from rankstudy.rankers.restarts import best_of_restarts
from rankstudy.rankers.scored import ScoredRanker
from rankstudy.scorers.linear import LinearScorer
from rankstudy.solvers import settings
from rankstudy.solvers.lbfgs import LBFGS

# loss -> whether it takes a gain and a sample
OBJECTIVES = {"mle": (False, True), "exp_gain": (True, True), "exp_gain_auc": (False, False),
              "l3": (True, True), "convex_loss": (True, True)}
DEFAULT_LOSS = "convex_loss"


def _loss_option(option: str) -> Param:
    # the default loss takes every option the others do, with the same declarations and defaults (tested)
    return loss_option_param(DEFAULT_LOSS, option)


class ConditionalRanker(ScoredRanker):
    """* ``loss``: ``mle`` (Eq. 10), ``exp_gain`` (Eqs. 6-7), ``exp_gain_auc`` (ExpGain-AUC in
      closed form, Figure 1), ``l3`` (Eq. 12) or ``convex_loss`` (Eq. 14); ``gain``: ``auc``,
      ``map`` or ``ndcg`` (NDCG@``k``) for the ones that take one; relevance label >= ``rel_threshold``.
    * ``C``: the regulariser ||w||^2 / (2C) beside the mean loss over queries (chosen on
      validation through the grid); ``normalize``: phi_po with its 1/(n+ n-) factor.
    * the sample (Section 4): ``sample_size`` states per query, walks of ``walk_length`` swaps,
      ``restart_states`` restart rankings chosen with Pr proportional to exp(``restart_skew`` Delta),
      their Deltas spread as ``restart_spread`` says; drawn once per split from ``seed``. The
      defaults (11 states with Deltas spread over [0, 1], skew -5: the paper's Figure 6 setup)
      give the gain rankings to act on; the paper's Figure 3 recipe (two states, skew -2.2,
      :data:`rankstudy.losses.swap_sampler.PAPER_FIGURE3`) leaves OHSUMED's MLE, L3 and
      ConvexLoss one model (:mod:`rankstudy.losses.swap_sampler`).
    * ``restarts``: optimiser starts (the first from w = 0, the others from N(0, 1/d) draws),
      the best by validation ``restart_metric`` kept; every restart's curve is in the history.
    """

    kind = "conditional"
    parameters = {
        "loss": Param(Choice(OBJECTIVES, "loss"), DEFAULT_LOSS),
        # the losses' options, as the losses declare them (losses.registry)
        "gain": _loss_option("gain"),
        "k": _loss_option("k"),
        "C": Param(Real(0, low_open=True), 1.0, space=LogUniform(1e-3, 1e3), help="the regulariser ||w||^2 / (2C)"),
        "normalize": _loss_option("normalize"),
        "sample_size": _loss_option("sample_size"),
        "walk_length": _loss_option("walk_length"),
        "restart_states": _loss_option("restart_states"),
        "restart_skew": _loss_option("restart_skew"),
        "restart_spread": _loss_option("restart_spread"),
        "restarts": Param(Integer(1), 1),
        "restart_metric": Param(Text(parse_metric, "a metric name, e.g. ndcg@10"), "ndcg@10"),
        "rel_threshold": _loss_option("rel_threshold"),
        "max_iter": settings.LBFGS["max_iter"],
        "tol": settings.LBFGS["tol"],
        "seed": SEED,
    }

    @property
    def l2(self) -> float:
        return 1.0 / float(self.C)

    def make_scorer(self) -> LinearScorer:
        return LinearScorer()

    def make_loss(self):
        takes_gain, sampled = OBJECTIVES[self.loss]
        options = {"rel_threshold": self.rel_threshold, "normalize": self.normalize}
        if takes_gain:
            options.update(gain=self.gain, k=self.k)
        if sampled:
            options.update(sample_size=self.sample_size, walk_length=self.walk_length,
                           restart_states=self.restart_states, restart_skew=self.restart_skew,
                           restart_spread=self.restart_spread, seed=self.seed)
        return bind_loss(self.loss, options)

    def make_solver(self, restart: int = 0) -> LBFGS:
        return LBFGS(max_iter=self.max_iter, tol=self.tol)

    def fit(self, train, vali=None) -> "ConditionalRanker":
        objective = self.objective(train)
        vali_obj = None
        if vali is not None:
            self._check_features(vali, tuple(train.feature_shape))
            vali_obj = self.objective(vali)

        def start(restart: int) -> np.ndarray:
            if restart == 0:
                return objective.initial(np.random.default_rng(self.seed))  # w = 0
            n = objective.n_params
            return np.random.default_rng([self.seed, restart]).normal(scale=1.0 / np.sqrt(max(n, 1)), size=n)

        solution, self.chosen_restart_, history = best_of_restarts(
            objective, vali_obj, vali, self.restarts, start=start, solver=self.make_solver,
            metric=self.restart_metric, rel_threshold=self.rel_threshold,
            label=f" ({self.loss}{'_' + self.gain if OBJECTIVES[self.loss][0] else ''})")
        self._adopt(solution, objective)
        self.history_ = history if self.restarts > 1 else solution.history
        return self

    def _get_state(self) -> dict:
        return {**super()._get_state(), "chosen_restart": getattr(self, "chosen_restart_", 0)}

    def _set_state(self, state: dict) -> None:
        self.chosen_restart_ = int(state.get("chosen_restart", 0))
        super()._set_state({k: v for k, v in state.items() if k != "chosen_restart"})

    @property
    def coef_(self) -> np.ndarray:
        return np.asarray(self.parts_["coef"], dtype=np.float64)
