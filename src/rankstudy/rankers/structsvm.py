"""Structural SVMs for non-smooth ranking losses (Chakrabarti et al., KDD 2008): a linear
scorer trained on a structured hinge (:mod:`rankstudy.losses.structured`) by the cutting-plane
solver (:mod:`rankstudy.solvers.cutting_plane`).

DORM and SVMmrr in their latent form (the default; :mod:`rankstudy.losses.inference`) have a
hinge that is not convex in w: the scores choose the target among the equally ideal ones. They
are fitted by CCCP (the concave-convex procedure of latent structural SVMs, Yu and Joachims,
ICML 2009): each round fixes the target by the current scores (the anchor), which gives a
convex upper bound of the objective that touches it at the current w, and minimises that bound
by cutting planes; the objective never increases from round to round.

The first round cannot take its anchor from w = 0: all scores tie there, and with a tie-broken
(or averaged) target the bound's minimum is w = 0 again (on OHSUMED fold 1, DORM at C = 10
stays at |w| ~ 1e-6 with the objective at 0.97574). So the first anchor comes from SVMauc at the
same C (phi_po does not see the order within a class, so it needs no target choice); the first
round still starts from w = 0, where every anchor's bound equals the objective.
"""

from __future__ import annotations

import numpy as np

from rankstudy.losses.registry import LOSSES, bind_loss, loss_option_param
from rankstudy.losses.structured import anchored, is_latent
from rankstudy.util.params import SEED, Choice, Integer, LogUniform, Mapping, Param, ParamError, Real
from rankstudy.rankers.scored import ScoredRanker, loss_options_error
from rankstudy.scorers.linear import LinearScorer
from rankstudy.solvers.base import Solution
from rankstudy.solvers.objective import Objective
from rankstudy.solvers import settings
from rankstudy.solvers.registry import SOLVERS, make_solver

# the paper's solver, and lbfgs for comparison (see the class); projected_sgd is not offered
STRUCTSVM_SOLVERS = ("cutting_plane", "lbfgs")
STRUCTURED_LOSSES = ("svm_auc", "svm_map", "svm_ndcg", "svm_ndcg_nc", "svm_mrr", "svm_mrr_po", "dorm", "svm_combo")
DEFAULT_LOSS = "svm_ndcg"


class StructSVMRanker(ScoredRanker):
    """min 1/2 ||w||^2 + C/|Q| sum_q xi_q  s.t.  w'(phi(x, y*) - phi(x, y)) >= Delta(y*, y) - xi_q,
    i.e. l2/2 ||w||^2 + mean structured hinge with l2 = 1/C.

    * ``loss``: ``svm_auc`` (SVMauc, the structural RankSVM), ``svm_map``, ``svm_ndcg``,
      ``svm_ndcg_nc``, ``svm_mrr``, ``svm_mrr_po`` (phi_po with Delta_MRR), ``dorm`` or ``svm_combo``; ``loss_params`` its options
      (``k``, ``cut``, ``criteria``, ``slacks``, ``latent``); ``rel_threshold`` makes labels binary.
    * ``C``: the SVM's regularisation constant; ``epsilon`` the cutting plane's tolerance (its
      rule, absolute and relative, also ends the CCCP rounds); ``max_iter`` its iterations
      per solve; ``latent_rounds`` the most CCCP rounds of a latent loss; ``solver``:
      ``cutting_plane`` (or ``lbfgs``, which handles the kinks of a hinge badly and is there for
      comparison; it minimises a latent loss directly, without rounds).

    History of a latent loss: the rounds' cutting-plane histories one after another, each entry
    with its ``round``; within a round ``objective`` is that round's convex bound (equal to the
    objective at the round's first entry), and the round's last entry has ``latent_objective``,
    the objective itself at the round's solution. The first entry's ``argmax_seconds`` and
    ``qp_seconds`` include the SVMauc fit of the first anchor (also given as ``init_*``).
    """

    kind = "structsvm"
    parameters = {
        "loss": Param(Choice(lambda: sorted(LOSSES), "loss"), DEFAULT_LOSS),
        "C": Param(Real(0, low_open=True), 1.0, space=LogUniform(1e-3, 1e3), help="the SVM's regularisation constant"),
        "epsilon": settings.CUTTING_PLANE["epsilon"],
        "max_iter": settings.CUTTING_PLANE["max_iter"],
        # every structured loss's option, as they declare it; the others are loss_params
        "rel_threshold": loss_option_param(DEFAULT_LOSS, "rel_threshold"),
        "loss_params": Param([None, Mapping()], None),
        "solver": Param(Choice(lambda: sorted(SOLVERS), "solver"), "cutting_plane"),
        "seed": SEED,
        "latent_rounds": Param(Integer(1), 20),
    }

    @classmethod
    def check_combination(cls, params: dict) -> None:
        if params["loss"] not in STRUCTURED_LOSSES:
            raise ParamError("loss", f"loss {params['loss']!r} is not a structured loss; valid: "
                                     f"{', '.join(STRUCTURED_LOSSES)}")
        loss_options_error(params["loss"], {"rel_threshold": params["rel_threshold"], **(params["loss_params"] or {})})
        if params["solver"] not in STRUCTSVM_SOLVERS:
            raise ParamError("solver", f"solver {params['solver']!r} is not available to structsvm; valid: "
                                       f"{', '.join(STRUCTSVM_SOLVERS)}")

    def solver_allowances(self) -> dict:
        # L-BFGS on a hinge is offered on purpose, to compare with the cutting planes (class docstring)
        return {"kinks": True}

    @property
    def l2(self) -> float:
        return 1.0 / float(self.C)

    def make_scorer(self) -> LinearScorer:
        return LinearScorer()

    @property
    def loss_options(self) -> dict:
        return {"rel_threshold": self.rel_threshold, **(self.loss_params or {})}

    def make_loss(self):
        return bind_loss(self.loss, self.loss_options, seed=self.seed)

    def fit(self, train, vali=None) -> "StructSVMRanker":
        if self.solver != "cutting_plane" or not is_latent(self.loss, self.loss_options):
            return super().fit(train, vali)
        objective = self.objective(train)
        vali_obj = None
        if vali is not None:
            self._check_features(vali, tuple(train.feature_shape))
            vali_obj = self.objective(vali)
        solver = self.make_solver()
        theta = objective.initial(np.random.default_rng(self.seed))
        start = current = objective(theta, need_grad=False)[0]
        first = StructSVMRanker(loss="svm_auc", C=self.C, epsilon=self.epsilon, max_iter=self.max_iter,
                                rel_threshold=self.rel_threshold, seed=self.seed).fit(train)
        anchor_theta = first.theta_
        history: list[dict] = []
        n_iter = n_fev = 0
        converged = False
        for round_ in range(self.latent_rounds):
            anchor = np.zeros(objective.shape)
            anchor.ravel()[objective.flat] = objective.scorer.scores(anchor_theta)
            bound = Objective(objective.scorer, anchored(self.loss, self.loss_options, anchor), train, self.l2)
            # the relative tolerance measures every round's progress from the first start
            solution = solver.solve(bound, theta, vali_obj, reference=start)
            value = objective(solution.theta, need_grad=False)[0]
            for entry in solution.history:
                history.append({**entry, "step": len(history), "round": round_})
            history[-1]["latent_objective"] = value
            n_iter, n_fev = n_iter + solution.n_iter, n_fev + solution.n_fev
            # the bound touches the objective at the round's start, so value <= current up to
            # the solver's tolerance. A better w is taken; so is the first round's within the
            # tolerance (the bound's certified minimiser rather than w = 0, all scores tied).
            # A round that gains no more than the tolerance ends the rounds (relative too: on
            # OHSUMED fold 4, DORM at C = 10 gains 4e-4 in its first round and an absolute 1e-3
            # stopped it there, within 0.04% of w = 0)
            gain = current - value
            tolerance = solver.tolerance(start, min(current, value))
            if gain > 0 or (round_ == 0 and gain >= -tolerance):
                theta, current = solution.theta, value
            if gain <= tolerance:
                converged = solution.converged
                break
            anchor_theta = theta
        # the first anchor's training counts in the timing sums (kept apart as init_* as well)
        for key in ("argmax_seconds", "qp_seconds"):
            spent = sum(h[key] for h in first.history_)
            history[0][f"init_{key}"] = spent
            history[0][key] += spent
        self._adopt(Solution(theta=theta, n_iter=n_iter, n_fev=n_fev, converged=converged, history=history),
                    objective)
        self.history_ = history
        return self

    def make_solver(self):
        return make_solver(self.solver, {"max_iter": self.max_iter, "epsilon": self.epsilon, "seed": self.seed})

    @property
    def coef_(self) -> np.ndarray:
        return np.asarray(self.parts_["coef"], dtype=np.float64)
