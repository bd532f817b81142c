"""Rankers that wrap LightGBM's gradient-boosted trees: the fitting loop with early stopping
on the validation split, the training curve, and the booster as the saved state. Subclasses
say which objective, which data set form and how predictions become scores."""

from __future__ import annotations

import importlib
from typing import ClassVar

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.rankers.base import NotFittedError, Ranker
from rankstudy.util import intermediate
from rankstudy.util.params import SEED, Integer, IntRange, LogUniform, Param, Real
from rankstudy.util.progress import Progress
from rankstudy.util.threads import job_threads


def lightgbm():
    # LightGBM (and the scikit-learn it loads) costs ~0.6 s to import: loaded when a boosted
    # ranker is fitted or loaded, not in every job that merely knows the ranker kinds
    return importlib.import_module("lightgbm")


def gbdt_library(module: str, kind: str):
    """The library a ranker of the ``gbdt`` extra wraps (xgboost, catboost), imported when the
    ranker is fitted or loaded (both cost seconds to import and are not installed by default);
    an ImportError saying how to install it when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"ranker kind {kind!r} needs {module}, not importable here ({exc}): "
                          f"pip install 'rankstudy[gbdt]'") from exc


def lightgbm_parameters(*, n_estimators: int, learning_rate: float, num_leaves: int, min_data_in_leaf: int,
                        early_stopping_rounds: int) -> dict[str, Param]:
    """The LightGBM settings the boosted rankers share, with LightGBM's own ranges (checked before
    any job: a negative learning rate used to fail inside the train job with LightGBM's
    traceback) and their tuning spaces; each ranker gives its own defaults, and ``library`` says
    LightGBM's own (``lgb.train``'s, LightGBM 4: 100 rounds, learning rate 0.1, no early stopping)."""
    return {
        "n_estimators": Param(Integer(1), n_estimators, help="boosting rounds at most", library="100"),
        "learning_rate": Param(Real(0, low_open=True), learning_rate, space=LogUniform(0.01, 0.3), library="0.1"),
        "num_leaves": Param(Integer(2, 131072), num_leaves, space=IntRange(4, 256, log=True), library="31"),
        "min_data_in_leaf": Param(Integer(0), min_data_in_leaf, space=IntRange(1, 200, log=True), library="20"),
        "lambda_l2": Param(Real(0), 0.0, space=LogUniform(1e-3, 10.0), library="0"),
        "early_stopping_rounds": Param(Integer(1), early_stopping_rounds, library="none"),
        "seed": SEED,
    }


def integer_labels(y: np.ndarray, who: str) -> np.ndarray:
    labels = np.rint(y)
    if not np.array_equal(labels, y) or labels.min() < 0:
        raise ValueError(f"{who} needs non-negative integer relevance labels")
    return labels.astype(np.int32)


class BoostedTrees(Ranker):
    """Subclasses set ``metric`` (the LightGBM evaluation watched by early stopping: the first
    in their ``metric`` list when they ask for several) and, when the training objective is
    another evaluation, ``objective_metric``; they implement ``lightgbm_params``, ``dataset``
    and ``scores``; they take ``n_estimators`` and ``early_stopping_rounds`` among their
    parameters; when the objective is a score (higher is better), they override
    ``objective_value`` to turn it into a loss.

    With ``vali``, training stops when the validation metric has not improved for
    ``early_stopping_rounds`` rounds and the model is cut back to the best iteration; without
    it all ``n_estimators`` rounds are kept. History: one dict per round with
    ``train_<metric>`` and, with vali, ``vali_<metric>`` for every evaluation LightGBM
    records, and ``objective``: the training objective after that round (lower is better), the
    step metric every ranker's history has; ``best_iteration_`` is the number of rounds kept."""

    metric: ClassVar[str] = ""
    library = "LightGBM"

    def tree_settings(self) -> dict:
        """The LightGBM settings every boosted ranker passes the same way (its objective, metrics and
        learning rate are its own): the declared tree parameters, the seed, one deterministic
        row-wise histogram build (the same model at any thread count) and the job's threads."""
        return {"num_leaves": self.num_leaves, "min_data_in_leaf": self.min_data_in_leaf, "lambda_l2": self.lambda_l2,
                "seed": self.seed, "deterministic": True, "force_row_wise": True,
                "num_threads": job_threads(), "verbosity": -1}
    # the evaluation whose training value at the kept rounds is the objective's final value
    # (``metric`` when empty)
    objective_metric: ClassVar[str] = ""
    parallel = True
    n_estimators: int
    early_stopping_rounds: int

    def lightgbm_params(self, train: RankData, vali: RankData | None) -> dict:
        raise NotImplementedError

    def dataset(self, data: RankData, reference=None):
        raise NotImplementedError

    def scores(self, raw: np.ndarray) -> np.ndarray:
        """Scores from the booster's predictions (one per document)."""
        return raw

    def objective_value(self, evaluation: float) -> float:
        """The training objective (lower is better) from the training ``objective_metric`` (or
        ``metric``) LightGBM evaluated after a round."""
        return evaluation

    def objective_trace(self, train: RankData, final: float) -> dict:
        """The training objective before the first tree and at the rounds kept (lower is
        better); ``final`` is :meth:`objective_value` at the kept rounds."""
        raise NotImplementedError

    def fit(self, train: RankData, vali: RankData | None = None) -> "BoostedTrees":
        lgb = lightgbm()
        params = self.lightgbm_params(train, vali)
        dtrain = self.dataset(train)
        sets, names = [dtrain], ["train"]
        if vali is not None:
            sets.append(self.dataset(vali, reference=dtrain))
            names.append("vali")
        evals: dict = {}
        progress = Progress(f"lightgbm {self.kind}", total=int(self.n_estimators), unit="round")

        def report(env) -> None:
            info = {f"{name}_{metric}": value for name, metric, value, _ in env.evaluation_result_list}
            progress.update(env.iteration + 1, **info)
            for name, metric, value, higher_better in env.evaluation_result_list:
                if name == "vali" and metric == self.metric:  # what early stopping watches, for tuning's pruner
                    intermediate.report(env.iteration + 1, value if higher_better else -value)

        callbacks = [lgb.record_evaluation(evals), report]
        if vali is not None and self.early_stopping_rounds:
            # LightGBM's early stopping ignores the training set and watches "vali"; with several
            # evaluations, only the first (``metric``)
            callbacks.append(lgb.early_stopping(int(self.early_stopping_rounds), first_metric_only=True,
                                                verbose=False))
        booster = lgb.train(params, dtrain, num_boost_round=int(self.n_estimators),
                            valid_sets=sets, valid_names=names, callbacks=callbacks)
        best = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
        # keep only the best rounds so predict() and the saved model agree
        self._set_state({"model": booster.model_to_string(num_iteration=best), "best_iteration": best})
        objective = [self.objective_value(float(v)) for v in evals["train"][self.objective_metric or self.metric]]
        self.history_ = [
            {"step": i + 1, **{f"{name}_{metric}": float(values[i])
                               for name in names for metric, values in evals[name].items()},
             "objective": objective[i]}
            for i in range(len(objective))
        ]
        self.objective_trace_ = self.objective_trace(train, objective[best - 1])
        return self

    def predict(self, data: RankData) -> np.ndarray:
        if not hasattr(self, "booster_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted")
        if data.n_features != self.booster_.num_feature():
            raise ValueError(f"expected {self.booster_.num_feature()} features, got {data.n_features}")
        return self.scores(np.asarray(self.booster_.predict(data.X, num_threads=job_threads()), dtype=np.float64))

    def _get_state(self) -> dict:
        return {"model": self.booster_.model_to_string(), "best_iteration": self.best_iteration_}

    def _set_state(self, state: dict) -> None:
        self.booster_ = lightgbm().Booster(model_str=state["model"])
        self.best_iteration_ = int(state["best_iteration"])
