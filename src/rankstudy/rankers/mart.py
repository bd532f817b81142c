"""MART (Friedman 2001): gradient-boosted regression trees fitted pointwise to the relevance
labels (squared error), LightGBM's ``regression`` objective; RankLib's MART baseline."""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.rankers.boosting import BoostedTrees, integer_labels, lightgbm, lightgbm_parameters


class MART(BoostedTrees):
    """Boosted regression trees on the labels, early stopping on validation NDCG@10 (see
    :class:`~rankstudy.rankers.boosting.BoostedTrees`). Defaults are RankLib's MART (1000
    trees of 10 leaves, shrinkage 0.1, at least 1 document per leaf, stop after 100 rounds
    without a better validation NDCG@10); LightGBM's 255 histogram bins play RankLib's 256
    threshold candidates. The objective is the training mean squared error: before the first
    tree LightGBM predicts the label mean, so it starts at the labels' variance."""

    kind = "mart"
    eval_at = 10
    metric = f"ndcg@{eval_at}"
    objective_metric = "l2"  # LightGBM's name for the mean squared error

    parameters = lightgbm_parameters(n_estimators=1000, learning_rate=0.1, num_leaves=10, min_data_in_leaf=1,
                                     early_stopping_rounds=100)

    def tree_params(self) -> dict:
        """How the trees are grown and combined (boosting, here)."""
        return {"learning_rate": self.learning_rate}

    def lightgbm_params(self, train: RankData | None = None, vali: RankData | None = None) -> dict:
        # NDCG@10 first: early stopping watches the first evaluation
        return {"objective": "regression", "metric": ["ndcg", "l2"], "eval_at": [self.eval_at],
                **self.tree_settings(), **self.tree_params()}

    def dataset(self, data: RankData, reference=None):
        # the groups serve only the NDCG evaluation; the regression itself ignores them
        label = integer_labels(data.y, type(self).__name__)
        return lightgbm().Dataset(data.X, label=label, group=data.query_lengths, reference=reference,
                                  params={"verbosity": -1})

    def objective_trace(self, train: RankData, final: float) -> dict:
        return {"start": float(np.var(train.y)), "final": final}
