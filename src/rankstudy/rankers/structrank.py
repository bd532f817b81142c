"""StructRank (Huang and Frey, NIPS 2008): a ranking function trained on the CDN loss -log F of
each query's order graph (:mod:`rankstudy.losses.cdn`), with the CDN weights (w1, w2) learnt
beside it, by constrained stochastic gradient (:mod:`rankstudy.solvers.projected_sgd`) from
several random starts, the one with the best validation MAP kept (Section 5).

Deviations from the paper's recipe, each a parameter whose other value is the paper's
(``reduction="sum", feasibility="halve", step_rule="plain"`` is the literal Section 5):

* ``reduction="mean"``: each query's loss is the mean over its CDN functions, not their sum
  -log F (Eq. 8). The paper: "the learning problem for the current observation D_t then
  becomes inf_theta sum_t sum_{e,e'} log(1 + exp(-w1 r_e) + exp(-w2 r_e'))" (Eq. 10). On OHSUMED
  a training query has ~5,900 edges, so the sum's gradient is E (disconnected) to E (E - 1)
  (full) times the mean's: at the start on fold 1 a median L1 norm of 25 (disconnected) and 9e4
  (full, up to 4.8e6) against 0.009 for the mean, and the paper's alpha = 0.5 either throws
  the parameters out of the L1 ball or, halved until it does not, barely moves them;
* ``feasibility="project"``: an infeasible update is projected onto {theta >= 0, ||theta||_1 <=
  l1_bound}. The paper: "we prevent updates from violating the inequality constraints [...] by
  reducing the learning rate alpha until the update becomes feasible"; on the boundary of the
  ball that never happens for a gradient whose components sum below 0;
* ``step_rule="adagrad"``: each component of a step is divided by the root of its summed
  squared gradients (AdaGrad); alpha = 0.5 and its 1/sqrt(2) per epoch are kept on top.

Figures for each (fold 1 of OHSUMED) are in :mod:`rankstudy.solvers.projected_sgd`.
"""

from __future__ import annotations

import numpy as np

from rankstudy.losses.cdn import CDNLoss
from rankstudy.losses.registry import loss_option_param
from rankstudy.util.params import SEED, Choice, Integer, Param, Real
from rankstudy.rankers.restarts import best_of_restarts
from rankstudy.rankers.scored import ScoredRanker
from rankstudy.scorers.kernel import PARAMETERS as KERNEL_PARAMETERS, NadarayaWatsonScorer
from rankstudy.scorers.linear import LinearScorer
from rankstudy.solvers.objective import Objective
from rankstudy.solvers.projected_sgd import ProjectedSGD
from rankstudy.solvers.settings import PROJECTED_SGD as SGD

RANKING_FUNCTIONS = ("nadaraya_watson", "linear")


class StructRank(ScoredRanker):
    """* ``topology``: ``full``, ``random`` (``degree`` partners per edge, ``n_topologies``
      random CDNs averaged) or ``disconnected``;
    * ``ranking_function``: ``nadaraya_watson`` (Eq. 7, one bandwidth per feature, over the
      training documents, which the model file therefore holds) or ``linear`` (the spine's
      w'x), so that topology and ranking function vary independently;
    * ``reduction``: ``mean`` (each query's loss per CDN function) or ``sum`` (the paper's -log F);
    * training: ``epochs`` of per-query gradient steps from ``step``, scaled by ``decay`` per
      epoch, theta >= 0 for the bandwidths and CDN weights and ||theta||_1 <= ``l1_bound`` (None:
      no bound; chosen on validation through the grid), kept feasible by ``feasibility``
      (``project`` or ``halve``, the paper's), each step scaled by ``step_rule`` (``adagrad`` or
      ``plain``, the paper's); ``restarts`` random starts in [0, 1], the best by validation MAP
      (label >= ``rel_threshold``) kept, or by training loss without a validation split.

    History: every restart's training curve, its keys prefixed ``restart<r>_``; the chosen
    restart is ``chosen_restart_``.
    """

    kind = "structrank"
    l2 = 0.0  # the regulariser is the L1 ball of the solver
    parameters = {
        # the CDN loss's options, as it declares them (losses.registry)
        "topology": loss_option_param("cdn", "topology"),
        "ranking_function": Param(Choice(RANKING_FUNCTIONS, "ranking_function"), "nadaraya_watson"),
        "degree": loss_option_param("cdn", "degree"),
        "n_topologies": loss_option_param("cdn", "n_topologies"),
        # the projected SGD's own settings, as it declares them
        **{name: SGD[name] for name in ("l1_bound", "step", "decay", "epochs")},
        "restarts": Param(Integer(1), 3),
        "rel_threshold": Param(Real(), 1.0),
        "seed": SEED,
        "chunk_rows": KERNEL_PARAMETERS["chunk_rows"],  # the Nadaraya-Watson scorer's declaration
        # not the loss's "sum" (the paper's -log F): the sum's gradient throws the paper's step
        # out of the L1 ball on OHSUMED (module docstring)
        "reduction": loss_option_param("cdn", "reduction", default="mean"),
        "feasibility": SGD["feasibility"],
        "step_rule": SGD["step_rule"],
    }

    def make_scorer(self):
        if self.ranking_function == "linear":
            return LinearScorer()
        return NadarayaWatsonScorer(self.reference_X_, self.reference_y_, self.chunk_rows)

    def make_loss(self) -> CDNLoss:
        return CDNLoss(self.topology, degree=self.degree, n_topologies=self.n_topologies, seed=self.seed,
                       reduction=self.reduction)

    def make_solver(self, restart: int = 0) -> ProjectedSGD:
        return ProjectedSGD(**{name: getattr(self, name) for name in ("step", "decay", "epochs", "l1_bound",
                                                                       "feasibility", "step_rule")},
                            seed=self.seed * 1000 + restart)

    def fit(self, train, vali=None) -> "StructRank":
        self.reference_X_, self.reference_y_ = train.X, train.y
        # one scorer binds both splits, so they share its squared reference features (a Nadaraya-
        # Watson scorer's, as large as the training split)
        scorer, loss = self.make_scorer(), self.make_loss()
        objective = Objective(scorer.bind(train), loss, train, self.l2)
        vali_obj = Objective(scorer.bind(vali), loss, vali, self.l2) if vali is not None else None
        solution, self.chosen_restart_, history = best_of_restarts(
            objective, vali_obj, vali, self.restarts,
            start=lambda restart: objective.initial(np.random.default_rng([self.seed, restart])),
            solver=self.make_solver, metric="map", rel_threshold=self.rel_threshold,
            label=f" ({self.topology} CDN, {self.ranking_function})")
        self._adopt(solution, objective)
        self.history_ = history
        return self

    def _get_state(self) -> dict:
        state = {**super()._get_state(), "chosen_restart": self.chosen_restart_}
        if self.ranking_function == "nadaraya_watson":
            state["reference"] = {"X": self.reference_X_.tolist(), "y": self.reference_y_.tolist()}
        return state

    def _set_state(self, state: dict) -> None:
        reference = state.get("reference")
        if reference is not None:
            self.reference_X_ = np.asarray(reference["X"], dtype=np.float64)
            self.reference_y_ = np.asarray(reference["y"], dtype=np.float64)
        self.chosen_restart_ = int(state["chosen_restart"])
        super()._set_state({k: v for k, v in state.items() if k not in ("reference", "chosen_restart")})

    @property
    def cdn_weights_(self) -> np.ndarray:
        return np.asarray(self.parts_["loss_params"], dtype=np.float64)
