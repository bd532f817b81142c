"""Random forests of regression trees on the relevance labels (Breiman 2001), RankLib's RF
ranker, through LightGBM's ``rf`` boosting: each tree is fitted to the labels on a random
subsample of the documents and of the features, and the forest averages them."""

from __future__ import annotations

from rankstudy.rankers.boosting import lightgbm_parameters
from rankstudy.rankers.mart import MART
from rankstudy.util.params import Integer, Param, Real, Uniform

_LIGHTGBM = lightgbm_parameters(n_estimators=300, learning_rate=1.0, num_leaves=100, min_data_in_leaf=1,
                                early_stopping_rounds=1)


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

    parameters = {  # no learning rate: rf averages its trees
        **{k: _LIGHTGBM[k] for k in ("n_estimators", "num_leaves", "min_data_in_leaf", "lambda_l2")},
        # LightGBM's rf needs a subsample of the documents (< 1), or every tree is the same
        "bagging_fraction": Param(Real(0, 1, low_open=True, high_open=True), 0.632, space=Uniform(0.3, 0.9),
                                  library="1"),
        "feature_fraction": Param(Real(0, 1, low_open=True), 0.3, space=Uniform(0.1, 1.0), library="1"),
        "early_stopping_rounds": Param([None, Integer(1)], None, library="none"),
        "seed": _LIGHTGBM["seed"],
    }

    def tree_params(self) -> dict:
        return {"boosting": "rf", "bagging_fraction": self.bagging_fraction, "bagging_freq": 1,
                "feature_fraction": self.feature_fraction}
