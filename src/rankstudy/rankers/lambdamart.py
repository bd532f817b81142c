"""LambdaMART: LightGBM's lambdarank objective, wrapped as a ranker."""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.metrics import per_query
from rankstudy.rankers.boosting import LIGHTGBM_CONSTRAINTS, BoostedTrees, integer_labels, lightgbm
from rankstudy.util.threads import job_threads


class LambdaMART(BoostedTrees):
    """Gradient-boosted trees with LightGBM's lambdarank objective (gains 2^r - 1), early
    stopping on validation NDCG@10 (see :class:`~rankstudy.rankers.boosting.BoostedTrees`).
    ``deterministic=True``, so a given seed reproduces the same model on any number of threads
    (the job's: :func:`~rankstudy.util.threads.job_threads`; tested)."""

    kind = "lambdamart"
    eval_at = 10
    metric = f"ndcg@{eval_at}"

    parameter_constraints = LIGHTGBM_CONSTRAINTS

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

    def lightgbm_params(self, train: RankData | None = None, vali: RankData | None = None) -> dict:
        return {
            "objective": "lambdarank", "metric": "ndcg", "eval_at": [self.eval_at],
            "learning_rate": self.learning_rate, "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf, "lambda_l2": self.lambda_l2,
            "seed": self.seed, "deterministic": True, "force_row_wise": True,
            "num_threads": job_threads(), "verbosity": -1,
        }

    def dataset(self, data: RankData, reference=None):
        label = integer_labels(data.y, "LambdaMART")
        if reference is None:
            return lightgbm().Dataset(data.X, label=label, group=data.query_lengths, params={"verbosity": -1})
        return lightgbm().Dataset(data.X, label=label, group=data.query_lengths, reference=reference)

    def objective_value(self, evaluation: float) -> float:
        """1 - training NDCG@10: lambdarank reports no value of its own objective."""
        return 1.0 - evaluation

    def objective_trace(self, train: RankData, final: float) -> dict:
        """Before the first tree every score is equal (ties in input order)."""
        start = float(per_query(np.zeros(len(train.y)), train.y, train.offsets, [self.metric])[self.metric].mean())
        return {"start": self.objective_value(start), "final": final}
