"""A ranker as scorer x objective x solver: a scoring function (:mod:`rankstudy.scorers`)
trained on a loss over padded queries plus an L2 penalty (:mod:`rankstudy.solvers.objective`)
by a solver (:mod:`rankstudy.solvers`).

A subclass says which three it uses (``make_scorer``, ``make_loss``, ``make_solver``) from its
plain-data parameters; fitting, predicting, saving and loading are shared here.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rankstudy.losses.padded import LossFn
from rankstudy.losses.registry import check_loss_options, loss_entry
from rankstudy.rankers.base import NotFittedError, Ranker
from rankstudy.util.params import Param, ParamError
from rankstudy.scorers.base import Scorer
from rankstudy.solvers.objective import Objective
from rankstudy.solvers.registry import SOLVERS, check_solver, check_solver_params, default_solver, make_solver

# a ranker's own parameters that the solvers declaring them take (lbfgs max_iter and tol, the
# cutting plane max_iter, the stochastic solvers seed); the rest of a solver's settings go in
# the ranker's solver_params
SOLVER_COMMON = ("max_iter", "tol", "seed")


def loss_options_error(loss: str, options: dict | None) -> None:
    """ParamError naming ``loss_params.KEY`` when the loss does not take option KEY or refuses its
    value (as :func:`solver_params_error` names ``solver_params.KEY``)."""
    try:
        check_loss_options(loss, options or {})
    except ParamError as exc:
        raise ParamError(f"loss_params.{exc.param}", exc.problem) from None


def solver_params_error(solver: str, solver_params: dict | None) -> None:
    """ParamError naming ``solver_params.KEY`` when ``solver`` has no such setting or refuses its
    value, or the ranker sets it itself (:data:`SOLVER_COMMON`)."""
    check_solver_params(solver, solver_params, reserved=SOLVER_COMMON)


def registered_solver(ranker: "ScoredRanker"):
    """The ranker's registered solver (``solver_name()``) with its :data:`SOLVER_COMMON`
    parameters (each solver takes those it declares) and its ``solver_params``."""
    common = {name: getattr(ranker, name) for name in SOLVER_COMMON if hasattr(ranker, name)}
    return make_solver(ranker.solver_name(), common, getattr(ranker, "solver_params", None))


class ScoredRanker(Ranker):
    """Subclasses take ``l2`` among their parameters, and ``seed`` if their start point is drawn
    at random (without one it is drawn from seed 0). Fitted state: ``theta_``,
    the scorer's named parts ``parts_`` (what the model file holds), ``n_iter_``, ``n_fev_``,
    ``converged_`` and the training curve ``history_`` (see the solver)."""

    l2: float
    seed: int = 0  # a subclass without a seed parameter starts from seed 0
    # whether the scores are linear in the parameters (the default solver of resolved_solver)
    linear_scores: ClassVar[bool] = True

    def make_scorer(self) -> Scorer:
        raise NotImplementedError

    def make_loss(self) -> LossFn:
        raise NotImplementedError

    def make_solver(self):
        # a ranker that takes solver_params chooses a registered solver by name; the others say theirs
        if "solver_params" in self.parameters:
            return registered_solver(self)
        raise NotImplementedError

    @classmethod
    def resolved_solver(cls, params: dict) -> str | None:
        """The registered solver a ranker with ``params`` (defaults filled in) trains with, for
        the rankers that take ``solver_params`` (their ``solver`` may be null: the first that fits
        the loss, for scores that are or are not linear in the parameters, ``linear_scores``);
        None for the others."""
        if "solver_params" not in cls.parameters:
            return None
        return params["solver"] or default_solver(loss_entry(params["loss"]), l2=params["l2"], linear=cls.linear_scores)

    @classmethod
    def part_parameters(cls, namespace: str, params: dict) -> dict[str, Param]:
        """``solver_params``: the settings of the solver ``params`` resolve to, but those the
        ranker sets itself (:data:`SOLVER_COMMON`)."""
        solver = cls.resolved_solver(params) if namespace == "solver_params" and "solver_params" in cls.parameters else None
        if solver is None:
            return {}
        return {name: p for name, p in SOLVERS[solver].parameters.items() if name not in SOLVER_COMMON}

    @classmethod
    def part_name(cls, namespace: str, params: dict) -> str:
        solver = cls.resolved_solver(params) if namespace == "solver_params" else None
        return (f"the {solver} solver's own settings; {', '.join(SOLVER_COMMON)} are the method's"
                if solver else namespace)

    def check_parts(self) -> None:
        """The solver must fit the loss (:func:`rankstudy.solvers.registry.check_solver`): checked
        for every scored ranker whose loss comes from the registry (``bind_loss``) and whose solver
        has a registered name, so a new ranker inherits the check. A refusal names ``solver``."""
        loss, name = self.make_loss(), self.solver_name()
        entry = getattr(loss, "entry", None)
        if entry is None or name is None:
            return
        try:
            check_solver(name, loss.name, entry, l2=float(self.l2), linear=self.make_scorer().linear_in_params,
                         **self.solver_allowances())
        except ValueError as exc:
            raise ParamError("solver", str(exc), owner=self.kind) from None

    def solver_name(self) -> str | None:
        """The registered name of the solver: the ``solver`` parameter where the ranker has one,
        known without importing the solver (a job that only scores, or only checks a spec, needs
        no SciPy optimiser), else the built solver's (None: not a registered solver)."""
        # resolved, not stored: the saved parameters keep what the config asked for (null)
        name = self.resolved_solver(self.get_params()) or getattr(self, "solver", None)
        return name if isinstance(name, str) else getattr(self.make_solver(), "name", None)

    def solver_allowances(self) -> dict:
        """Exceptions to the solver x loss rule a ranker makes on purpose (keyword arguments of
        ``check_solver``); none by default."""
        return {}

    def objective(self, data) -> Objective:
        """The training objective on ``data``: loss + l2/2 ||theta||^2 (a callable)."""
        return Objective(self.make_scorer().bind(data), self.make_loss(), data, self.l2)

    def fit(self, train, vali=None) -> "ScoredRanker":
        train_obj = self.objective(train)
        vali_obj = None
        if vali is not None:
            self._check_features(vali, tuple(train.feature_shape))
            vali_obj = self.objective(vali)
        theta0 = train_obj.initial(np.random.default_rng(self.seed))
        solution = self.make_solver().solve(train_obj, theta0, vali_obj)
        self._adopt(solution, train_obj)
        self.history_ = solution.history
        return self

    def _adopt(self, solution, objective: Objective) -> None:
        """Take a solver's solution as the fitted state (history aside)."""
        # theta_ is the scorer's part; a loss's own parameters are kept in parts_
        self._set_theta(solution.theta[:objective.scorer.n_params], objective.unpack(solution.theta))
        self.n_iter_, self.n_fev_, self.converged_ = solution.n_iter, solution.n_fev, solution.converged
        # did it learn: the objective where the solver started (its history's step 0) and at the
        # solution, both the full objective (loss + penalty) on the training split
        first = solution.history[0] if solution.history else {}
        start = first.get("objective", first.get("train_loss"))
        final = objective(solution.theta, need_grad=False)[0]
        self.objective_trace_ = {"start": None if start is None else float(start), "final": float(final)}

    def _set_theta(self, theta: np.ndarray, parts: dict[str, Any]) -> None:
        self.theta_ = np.asarray(theta, dtype=np.float64)
        self.parts_ = parts

    def _check_features(self, data, expected: tuple[int, ...]) -> None:
        got = tuple(data.feature_shape)
        if got != expected:
            describe = type(data).describe_features
            raise ValueError(f"expected {describe(expected)}, got {describe(got)}")

    def predict(self, data) -> np.ndarray:
        if not hasattr(self, "theta_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted")
        scorer = self.make_scorer()
        scorer.check_kind(data)
        self._check_features(data, scorer.feature_shape(self.parts_))
        return scorer.bind(data).scores(self.theta_)

    def _get_state(self) -> dict:
        return {**self.parts_, "n_iter": self.n_iter_, "n_fev": self.n_fev_, "converged": self.converged_}

    def _set_state(self, state: dict) -> None:
        theta = self.make_scorer().pack(state)
        self._set_theta(theta, {k: v for k, v in state.items() if k not in ("n_iter", "n_fev", "converged")})
        self.n_iter_ = int(state["n_iter"])
        self.n_fev_ = int(state["n_fev"])
        self.converged_ = bool(state["converged"])
