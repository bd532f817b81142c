"""LambdaMART: LightGBM's lambdarank objective, wrapped as a ranker."""

from __future__ import annotations

import importlib

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.rankers.base import NotFittedError, Ranker


def _lightgbm():
    # LightGBM (and the scikit-learn it loads) costs ~0.6 s to import: loaded when a LambdaMART
    # is fitted or loaded, not in every job that merely knows the ranker kinds
    return importlib.import_module("lightgbm")


def _integer_labels(y: np.ndarray) -> np.ndarray:
    labels = np.rint(y)
    if not np.array_equal(labels, y) or labels.min() < 0:
        raise ValueError("LambdaMART needs non-negative integer relevance labels")
    return labels.astype(np.int32)


class LambdaMART(Ranker):
    """Gradient-boosted trees with LightGBM's lambdarank objective (gains 2^r - 1).

    With ``vali``, training stops when validation NDCG@10 has not improved for
    ``early_stopping_rounds`` rounds and the model is cut back to the best iteration;
    without it all ``n_estimators`` rounds are kept. Single-threaded and
    ``deterministic=True`` so a given seed reproduces the same model.

    History: one dict per boosting round with ``train_ndcg@10`` and, when vali is
    given, ``vali_ndcg@10``; ``best_iteration_`` is the number of rounds kept.
    """

    kind = "lambdamart"
    eval_at = 10

    def __init__(self, n_estimators: int = 300, learning_rate: float = 0.05, num_leaves: int = 31,
                 min_data_in_leaf: int = 20, lambda_l2: float = 0.0, early_stopping_rounds: int = 30,
                 seed: int = 0) -> None:
        super().__init__()
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_data_in_leaf = min_data_in_leaf
        self.lambda_l2 = lambda_l2
        self.early_stopping_rounds = early_stopping_rounds
        self.seed = seed

    def lightgbm_params(self) -> dict:
        return {
            "objective": "lambdarank", "metric": "ndcg", "eval_at": [self.eval_at],
            "learning_rate": self.learning_rate, "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf, "lambda_l2": self.lambda_l2,
            "seed": self.seed, "deterministic": True, "force_row_wise": True,
            "num_threads": 1, "verbosity": -1,
        }

    def fit(self, train: RankData, vali: RankData | None = None) -> "LambdaMART":
        lgb = _lightgbm()
        params = self.lightgbm_params()
        dtrain = lgb.Dataset(train.X, label=_integer_labels(train.y), group=train.query_lengths,
                             params={"verbosity": -1})
        sets, names = [dtrain], ["train"]
        if vali is not None:
            sets.append(lgb.Dataset(vali.X, label=_integer_labels(vali.y), group=vali.query_lengths,
                                    reference=dtrain))
            names.append("vali")
        evals: dict = {}
        callbacks = [lgb.record_evaluation(evals)]
        if vali is not None and self.early_stopping_rounds:
            # LightGBM's early stopping ignores the training set and watches "vali"
            callbacks.append(lgb.early_stopping(int(self.early_stopping_rounds), verbose=False))
        booster = lgb.train(params, dtrain, num_boost_round=int(self.n_estimators),
                            valid_sets=sets, valid_names=names, callbacks=callbacks)
        best = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
        # keep only the best rounds so predict() and the saved model agree
        self._set_state({"model": booster.model_to_string(num_iteration=best), "best_iteration": best})
        metric = f"ndcg@{self.eval_at}"
        self.history_ = [
            {"step": i + 1, **{f"{name}_{metric}": float(evals[name][metric][i]) for name in names}}
            for i in range(len(evals["train"][metric]))
        ]
        return self

    def predict(self, data: RankData) -> np.ndarray:
        if not hasattr(self, "booster_"):
            raise NotFittedError("LambdaMART is not fitted")
        if data.n_features != self.booster_.num_feature():
            raise ValueError(f"expected {self.booster_.num_feature()} features, got {data.n_features}")
        return np.asarray(self.booster_.predict(data.X, num_threads=1), dtype=np.float64)

    def _get_state(self) -> dict:
        return {"model": self.booster_.model_to_string(), "best_iteration": self.best_iteration_}

    def _set_state(self, state: dict) -> None:
        self.booster_ = _lightgbm().Booster(model_str=state["model"])
        self.best_iteration_ = int(state["best_iteration"])
