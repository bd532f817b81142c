"""RankBoost (Freund, Iyer, Schapire and Singer, JMLR 2003): boosting over the crucial pairs
of each query, with weak rankers that threshold one feature, h(x) = [x_f > theta], chosen
each round to maximise |r|, weighted by alpha = 1/2 ln((1 + r) / (1 - r)) (the paper's choice
for {0, 1}-valued weak rankers). Pairs carry a distribution over all of them, so graded labels
work as well as the bipartite (relevant vs not) case of RankBoost.B.

At scale: the distribution is held through per-document potentials (``pair_potentials``: the
product form D(i, j) = c_q exp(s(j) - s(i)) / L, no array of pairs), and the features are binned
once between their candidate thresholds (``threshold_bins``), so a round is one weighted bincount
per feature: O(n d) time, O(n) memory besides the d x n codes of one or two bytes."""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.metrics import per_query
from rankstudy.rankers.base import NotFittedError, Ranker
from rankstudy.rankers.pair_potentials import CrucialPairs
from rankstudy.rankers.threshold_bins import all_r, bin_features
from rankstudy.util import intermediate
from rankstudy.util.params import SEED, Choice, Integer, Param, Real
from rankstudy.util.progress import Progress

VALI_EVERY = 10  # rounds between validation NDCG@10 evaluations
R_CLIP = 1.0 - 1e-12  # keeps alpha finite when one threshold orders every pair


PAIRS = ("graded", "binary")


class RankBoost(Ranker):
    """* ``n_rounds``: boosting rounds (weak rankers); with a validation split the model is
      cut back to the round count with the best validation NDCG@10 (evaluated every 10 rounds
      and at the last), kept as ``best_round_``; without one all rounds are kept;
    * ``pairs``: ``graded`` to order every pair of different grades, or ``binary`` to binarise
      the labels first (label >= ``rel_threshold``, the run's ``evaluation.rel_threshold`` in
      the pipeline), as in the paper's bipartite case;
    * ``max_thresholds``: candidate thresholds per feature (None: every midpoint between
      distinct values). A feature with more distinct values keeps only thresholds at about
      that many quantiles of its values, which bounds the search to d * max_thresholds
      candidates and the codes to one byte a value up to 255 (two up to 65,535); a round's
      histograms cost O(n d) either way;
    * ``seed``: unused (the algorithm is deterministic), taken like every ranker's.

    The initial pair distribution weights queries equally. Ties in |r| go to the first
    candidate in (feature, threshold descending) order, as with every threshold's r summed in
    sorted order (commit 8fda413); the sums now run in another order, so r and alpha may differ
    from that code's in the last digits (MQ2008 and OHSUMED, 10 folds: the same weak rankers,
    alphas within 7e-14 relative, test scores within 2e-14). History: one dict per round with
    ``train_exp_loss`` (prod_t Z_t = L, the exponential pair loss under the initial distribution),
    the same as ``objective``, and, every 10 rounds with a validation split, ``vali_ndcg@10``."""

    kind = "rankboost"
    parameters = {
        # no search space: the best round is kept on validation and a round does not depend on
        # n_rounds, so a trial's model is a prefix of the longest one's (tuning it only re-fits;
        # docs/results/2026-11-pruning.md)
        "n_rounds": Param(Integer(1), 300, help="boosting rounds at most"),
        "pairs": Param(Choice(PAIRS, "pairs"), "graded"),
        "rel_threshold": Param(Real(), 1.0),
        "max_thresholds": Param([None, Integer(1)], 256, help="candidate thresholds per feature (null: all)"),
        "seed": SEED,
    }

    def fit(self, train: RankData, vali: RankData | None = None) -> "RankBoost":
        X = train.X
        if vali is not None and vali.n_features != train.n_features:
            raise ValueError(f"RankBoost: validation split has {vali.n_features} features, "
                             f"training split {train.n_features}")
        y = train.y if self.pairs == "graded" else (train.y >= self.rel_threshold).astype(np.float64)
        pairs = CrucialPairs(y, train.offsets)
        bins = bin_features(X, self.max_thresholds)
        if len(bins.theta) == 0:
            raise ValueError("RankBoost: no feature takes two different values in the training data")
        features, thresholds, alphas, history = [], [], [], []
        best_ndcg, best_round = -np.inf, int(self.n_rounds)
        vali_scores = None if vali is None else np.zeros(len(vali.y))
        scores = np.zeros(X.shape[0])  # sum of alpha h on the training documents: D follows from it
        pi, _ = pairs.potential(scores)
        progress = Progress("rankboost", total=int(self.n_rounds), unit="round")
        for t in range(1, int(self.n_rounds) + 1):
            r_all = all_r(pi, bins)
            best = int(np.argmax(np.abs(r_all)))
            f, theta = int(bins.feature[best]), float(bins.theta[best])
            r = float(np.clip(r_all[best], -R_CLIP, R_CLIP))
            alpha = 0.5 * np.log((1 + r) / (1 - r))
            scores += alpha * bins.h(best)
            pi, log_loss = pairs.potential(scores)
            loss = float(np.exp(log_loss))
            features.append(f)
            thresholds.append(theta)
            alphas.append(float(alpha))
            entry = {"step": t, "train_exp_loss": float(loss), "objective": float(loss)}
            if vali is not None:
                vali_scores += alpha * (vali.X[:, f] > theta)  # incremental: one weak ranker per round
                if t % VALI_EVERY == 0 or t == self.n_rounds:
                    ndcg = float(per_query(vali_scores, vali.y, vali.offsets, ["ndcg@10"])["ndcg@10"].mean())
                    entry["vali_ndcg@10"] = ndcg
                    intermediate.report(t, ndcg)  # for tuning's pruner
                    if ndcg > best_ndcg:
                        best_ndcg, best_round = ndcg, t
            history.append(entry)
            best_note = {"best_vali_ndcg@10": best_ndcg, "at_round": best_round} if vali is not None else {}
            progress.update(t, train_exp_loss=float(loss), **best_note)
        # keep only the best rounds so predict() and the saved model agree
        self._set_state({"features": features[:best_round], "thresholds": thresholds[:best_round],
                         "alphas": alphas[:best_round], "n_features": train.n_features})
        self.history_ = history
        # the exponential pair loss: 1 with no weak ranker, the product of the Z_t after them
        self.objective_trace_ = {"start": 1.0, "final": float(history[best_round - 1]["train_exp_loss"])}
        return self

    def predict(self, data: RankData) -> np.ndarray:
        if not hasattr(self, "alphas_"):
            raise NotFittedError("RankBoost is not fitted")
        if data.n_features != self.n_features_:
            raise ValueError(f"RankBoost: expected {self.n_features_} features, got {data.n_features}")
        scores = np.zeros(data.X.shape[0])
        for f, theta, alpha in zip(self.features_, self.thresholds_, self.alphas_):
            scores += alpha * (data.X[:, f] > theta)
        return scores

    def _get_state(self) -> dict:
        return {"features": self.features_.tolist(), "thresholds": self.thresholds_.tolist(),
                "alphas": self.alphas_.tolist(), "n_features": self.n_features_}

    def _set_state(self, state: dict) -> None:
        self.features_ = np.asarray(state["features"], dtype=np.int64)
        self.thresholds_ = np.asarray(state["thresholds"], dtype=np.float64)
        self.alphas_ = np.asarray(state["alphas"], dtype=np.float64)
        self.n_features_ = int(state["n_features"])
        self.best_round_ = len(self.alphas_)
