"""RankBoost (Freund, Iyer, Schapire and Singer, JMLR 2003): boosting over the crucial pairs
of each query, with weak rankers that threshold one feature, h(x) = [x_f > theta], chosen
each round to maximise |r|, weighted by alpha = 1/2 ln((1 + r) / (1 - r)) (the paper's choice
for {0, 1}-valued weak rankers). Pairs carry a distribution over all of them, so graded labels
work as well as the bipartite (relevant vs not) case of RankBoost.B."""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.metrics import per_query
from rankstudy.rankers.base import NotFittedError, Ranker
from rankstudy.util.params import Choice, Integer, IntRange, Param, Real
from rankstudy.util.progress import Progress

VALI_EVERY = 10  # rounds between validation NDCG@10 evaluations
R_CLIP = 1.0 - 1e-12  # keeps alpha finite when one threshold orders every pair



def crucial_pairs(y: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hi, lo, D): every within-query pair with y[hi] > y[lo], and the initial distribution,
    uniform within a query and equal across the queries that have a pair."""
    his, los, weights = [], [], []
    # a loop over queries (not pairs) bounds the scratch memory by the longest query's L^2
    for a, b in zip(offsets[:-1], offsets[1:]):
        hi, lo = np.nonzero(y[a:b, None] > y[None, a:b])
        if len(hi):
            his.append(hi + a)
            los.append(lo + a)
            weights.append(np.full(len(hi), 1.0 / len(hi)))
    if not his:
        raise ValueError("RankBoost: the training data has no crucial pair (no query holds two "
                         "documents with different labels)")
    D = np.concatenate(weights)
    return np.concatenate(his), np.concatenate(los), D / D.sum()


def threshold_candidates(X: np.ndarray, max_thresholds: int | None):
    """The column-wise descending argsort of X and the candidate weak rankers: for each one,
    the sorted position k such that the top k + 1 documents of feature f have x_f > theta.
    Candidates sit between consecutive distinct values; a feature with more than
    ``max_thresholds`` of them keeps about that many, at quantiles of its values."""
    n = X.shape[0]
    order = np.argsort(-X, axis=0, kind="stable")
    Xs = np.take_along_axis(X, order, axis=0)
    change = Xs[:-1] > Xs[1:]  # (n - 1, d): the value drops after sorted position k
    ks, fs = [], []
    for f in range(X.shape[1]):  # setup only: a loop over features, once per fit
        k = np.flatnonzero(change[:, f])
        if max_thresholds is not None and len(k) > max_thresholds:
            # the first change at or after each of max_thresholds evenly spaced document ranks
            targets = np.linspace(0, n - 1, max_thresholds + 2)[1:-1]
            k = np.unique(k[np.minimum(np.searchsorted(k, targets), len(k) - 1)])
        ks.append(k)
        fs.append(np.full(len(k), f))
    k, f = np.concatenate(ks), np.concatenate(fs)
    above, below = Xs[k, f], Xs[k + 1, f]
    theta = 0.5 * above + 0.5 * below
    # between two adjacent floats the midpoint may round up onto the upper one
    theta = np.where(theta >= above, below, theta)
    return order, k, f, theta


def all_r(pi: np.ndarray, order: np.ndarray, k: np.ndarray, f: np.ndarray) -> np.ndarray:
    """r(f, theta) = sum of pi over the documents with x_f > theta, for every candidate at
    once: a cumulative sum of pi in each feature's descending order, read at the candidates."""
    return np.cumsum(pi[order], axis=0)[k, f]


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
      that many quantiles of its values, which bounds the search and the candidate arrays to
      d * max_thresholds; the cumulative sums cost O(n d) per round either way;
    * ``seed``: unused (the algorithm is deterministic), taken like every ranker's.

    The initial pair distribution weights queries equally. History: one dict per round with
    ``train_exp_loss`` (prod_t Z_t, the exponential pair loss under the initial distribution),
    the same as ``objective``, and, every 10 rounds with a validation split, ``vali_ndcg@10``."""

    kind = "rankboost"
    parameters = {
        "n_rounds": Param(Integer(1), 300, space=IntRange(50, 1000, log=True), help="boosting rounds at most"),
        "pairs": Param(Choice(PAIRS, "pairs"), "graded"),
        "rel_threshold": Param(Real(), 1.0),
        "max_thresholds": Param([None, Integer(1)], 256, help="candidate thresholds per feature (null: all)"),
        "seed": Param(Integer(), 0),
    }

    def fit(self, train: RankData, vali: RankData | None = None) -> "RankBoost":
        X = train.X
        if vali is not None and vali.n_features != train.n_features:
            raise ValueError(f"RankBoost: validation split has {vali.n_features} features, "
                             f"training split {train.n_features}")
        y = train.y if self.pairs == "graded" else (train.y >= self.rel_threshold).astype(np.float64)
        hi, lo, D = crucial_pairs(y, train.offsets)
        order, cand_k, cand_f, cand_theta = threshold_candidates(X, self.max_thresholds)
        if len(cand_k) == 0:
            raise ValueError("RankBoost: no feature takes two different values in the training data")
        n = X.shape[0]
        features, thresholds, alphas, history = [], [], [], []
        loss, best_ndcg, best_round = 1.0, -np.inf, int(self.n_rounds)
        vali_scores = None if vali is None else np.zeros(len(vali.y))
        progress = Progress("rankboost", total=int(self.n_rounds), unit="round")
        for t in range(1, int(self.n_rounds) + 1):
            pi = np.bincount(hi, D, n) - np.bincount(lo, D, n)
            r_all = all_r(pi, order, cand_k, cand_f)
            best = int(np.argmax(np.abs(r_all)))
            f, theta = int(cand_f[best]), float(cand_theta[best])
            r = float(np.clip(r_all[best], -R_CLIP, R_CLIP))
            alpha = 0.5 * np.log((1 + r) / (1 - r))
            h = (X[:, f] > theta).astype(np.float64)
            D = D * np.exp(alpha * (h[lo] - h[hi]))
            Z = D.sum()
            D /= Z
            loss *= Z
            features.append(f)
            thresholds.append(theta)
            alphas.append(float(alpha))
            entry = {"step": t, "train_exp_loss": float(loss), "objective": float(loss)}
            if vali is not None:
                vali_scores += alpha * (vali.X[:, f] > theta)  # incremental: one weak ranker per round
                if t % VALI_EVERY == 0 or t == self.n_rounds:
                    ndcg = float(per_query(vali_scores, vali.y, vali.offsets, ["ndcg@10"])["ndcg@10"].mean())
                    entry["vali_ndcg@10"] = ndcg
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
