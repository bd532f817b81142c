"""LambdaMART: LightGBM's lambdarank objective, wrapped as a ranker."""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.metrics import per_query
from rankstudy.rankers.boosting import BoostedTrees, integer_labels, lightgbm, lightgbm_parameters


class LambdaMART(BoostedTrees):
    """Gradient-boosted trees with LightGBM's lambdarank objective (gains 2^r - 1), early
    stopping on validation NDCG@10 (see :class:`~rankstudy.rankers.boosting.BoostedTrees`).
    Its defaults are rankstudy's, not LightGBM's: learning rate 0.05 (LightGBM's 0.1), at most 300
    rounds (LightGBM's 100) with early stopping after 30 (LightGBM: none); 31 leaves and 20
    documents a leaf are LightGBM's own.
    ``deterministic=True``, so a given seed reproduces the same model on any number of threads
    (the job's: :func:`~rankstudy.util.threads.job_threads`; tested)."""

    kind = "lambdamart"
    eval_at = 10
    metric = f"ndcg@{eval_at}"

    parameters = lightgbm_parameters(n_estimators=300, learning_rate=0.05, num_leaves=31, min_data_in_leaf=20,
                                     early_stopping_rounds=30)

    def lightgbm_params(self, train: RankData | None = None, vali: RankData | None = None) -> dict:
        return {"objective": "lambdarank", "metric": "ndcg", "eval_at": [self.eval_at],
                "learning_rate": self.learning_rate, **self.tree_settings()}

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
