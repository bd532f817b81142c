"""Random forests of regression trees on the relevance labels (Breiman 2001), RankLib's RF
ranker, through LightGBM's ``rf`` boosting: each tree is fitted to the labels on a random
subsample of the documents and of the features, and the forest averages them."""

from __future__ import annotations

from rankstudy.rankers.base import Ranker
from rankstudy.rankers.boosting import LIGHTGBM_CONSTRAINTS
from rankstudy.rankers.mart import MART
from rankstudy.rankers.params import Integer, Real


class RandomForest(MART):
    """Defaults after RankLib's RF (300 bags of one 100-leaf tree, 30% of the features per bag,
    at least 1 document per leaf). RankLib draws each bag with replacement; LightGBM samples
    without, so ``bagging_fraction`` defaults to 0.632, the expected share of distinct
    documents in a bootstrap sample (drawn afresh for every tree: ``bagging_freq`` 1).

    No early stopping by default (``early_stopping_rounds`` null): averaging more trees does
    not overfit, it only steadies the forest, so all ``n_estimators`` trees are kept; the
    validation NDCG@10 is still recorded per tree, and a number of rounds turns early stopping
    on as for MART. History and objective (training mean squared error of the averaged
    forest, from the label variance) as :class:`~rankstudy.rankers.mart.MART`'s."""

    kind = "random_forest"

    parameter_constraints = {
        **{k: v for k, v in LIGHTGBM_CONSTRAINTS.items() if k != "learning_rate"},
        "early_stopping_rounds": [None, Integer(1)],
        # LightGBM's rf needs a subsample of the documents (< 1), or every tree is the same
        "bagging_fraction": [Real(0, 1, low_open=True, high_open=True)],
        "feature_fraction": [Real(0, 1, low_open=True)],
    }

    def __init__(self, n_estimators: int = 300, num_leaves: int = 100, min_data_in_leaf: int = 1,
                 lambda_l2: float = 0.0, bagging_fraction: float = 0.632, feature_fraction: float = 0.3,
                 early_stopping_rounds: int | None = None, seed: int = 0) -> None:
        Ranker.__init__(self)  # not MART's: no learning rate (rf averages its trees)
        self.n_estimators = n_estimators
        self.num_leaves = num_leaves
        self.min_data_in_leaf = min_data_in_leaf
        self.lambda_l2 = lambda_l2
        self.bagging_fraction = bagging_fraction
        self.feature_fraction = feature_fraction
        self.early_stopping_rounds = early_stopping_rounds
        self.seed = seed

    def tree_params(self) -> dict:
        return {"boosting": "rf", "bagging_fraction": self.bagging_fraction, "bagging_freq": 1,
                "feature_fraction": self.feature_fraction}
