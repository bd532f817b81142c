"""McRank (Li, Burges and Wu, NIPS 2007): ranking by multiple classification. Boosted trees
learn P(relevance = z | x) with LightGBM's multiclass objective; a document's score is its
expected relevance sum_z z P(z | x), which ranks better than the most likely class."""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.rankers.boosting import BoostedTrees, integer_labels, lightgbm, lightgbm_parameters


class McRank(BoostedTrees):
    """Multiclass boosted trees over the label grades 0..max label, early stopping on the
    validation multi-class log loss (see :class:`~rankstudy.rankers.boosting.BoostedTrees`).
    Chakrabarti et al. used 30 rounds (more hurt on LETOR), hence the default."""

    kind = "mcrank"
    metric = "multi_logloss"

    parameters = lightgbm_parameters(n_estimators=30, learning_rate=0.1, num_leaves=31, min_data_in_leaf=20,
                                     early_stopping_rounds=10)

    def lightgbm_params(self, train: RankData, vali: RankData | None = None) -> dict:
        n_classes = 1 + max(int(integer_labels(d.y, "McRank").max()) for d in (train, vali) if d is not None)
        return {"objective": "multiclass", "num_class": max(n_classes, 2), "metric": "multi_logloss",
                "learning_rate": self.learning_rate, **self.tree_settings()}

    def dataset(self, data: RankData, reference=None):
        label = integer_labels(data.y, "McRank")
        return lightgbm().Dataset(data.X, label=label, reference=reference, params={"verbosity": -1})

    def scores(self, raw: np.ndarray) -> np.ndarray:
        """Expected relevance: the class probabilities (n, K) times the grades 0..K-1."""
        return raw @ np.arange(raw.shape[1], dtype=np.float64)

    def objective_trace(self, train: RankData, final: float) -> dict:
        """The training multi-class log loss; before the first tree LightGBM predicts the class
        frequencies, whose log loss is their entropy."""
        counts = np.bincount(integer_labels(train.y, "McRank"))
        p = counts[counts > 0] / counts.sum()
        return {"start": float(-(p * np.log(p)).sum()), "final": final}
