"""AdaRank (Xu and Li, SIGIR 2007), as RankLib's AdaRank: boosting on a ranking metric
(AdaRank-MAP, AdaRank-NDCG, ...) with single-feature weak rankers. Each round picks the feature
whose ranking has the highest query-weighted metric sum_q P(q) E(q, f), weights it by
alpha = 1/2 ln(sum_q P(q) (1 + E(q, f)) / sum_q P(q) (1 - E(q, f))), and re-weights the queries
by P(q) proportional to exp(-E(q, model)), the model being sum_t alpha_t x_{f_t}.

A weak ranker's ranking never changes, so E(q, f) is computed once, for every feature and every
query (one :func:`~rankstudy.evaluation.metrics.per_query` call per feature over the whole
split); a round costs a (d, Q) x (Q,) product for the pick, the model's scores (one (n, d)
product) and one per_query call for the model.

RankLib's guards (its ``trainWithEnqueue`` scheme): a feature picked twice in a row is put in a
queue and its first pick rolled back (the query weights and the training score restored); when
the first phase ends, the queued features return one at a time (the last queued first) and
training goes on, now allowing repeats: a feature picked ``max_consecutive`` times in a row
while the training metric does not change leaves the pool until it changes. Training stops
(and drops the round) when a round lowers the training metric by ``tolerance`` or more, or
after ``n_rounds`` rounds in all. ``enqueue=False`` is RankLib's ``-noeq``: no queue, every
round under the second phase's rules (the paper's rounds: a feature may be picked again). With
the queue, data with a few informative features and a flat metric on the rest (MAP with half
the documents relevant) can spend every round in the first phase on noise features, the queued
informative ones never returning (docs/methods.md); the leaderboard's AdaRank-MAP runs without it.
"""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.metrics import per_query
from rankstudy.rankers.base import NotFittedError, Ranker
from rankstudy.rankers.coordinate_ascent import metric_constraint
from rankstudy.util import intermediate
from rankstudy.util.params import SEED, Boolean, Integer, IntRange, LogUniform, Param, Real
from rankstudy.util.progress import Progress
from rankstudy.util.rowchunks import matvec64

DENOM_FLOOR = 1e-12  # keeps alpha finite when a feature ranks every weighted query perfectly


def feature_weights(features, alphas, n_features: int) -> np.ndarray:
    """The model sum_t alpha_t x_{f_t} as one weight per feature: a round then costs one
    (n, d) product however many rounds came before, and training and predict sum alike."""
    return np.bincount(np.asarray(features, dtype=np.int64), np.asarray(alphas, dtype=np.float64), n_features)


class AdaRank(Ranker):
    """* ``metric``: the metric boosted (``map``: AdaRank-MAP; ``ndcg@k``: AdaRank-NDCG; any
      metric name in [0, 1] works), binary relevance at ``rel_threshold`` (the run's);
    * ``n_rounds``: rounds in all, rolled-back ones included (RankLib: 500);
    * ``tolerance``: stop when a round lowers the training metric by this much (0.002);
    * ``max_consecutive``: picks of one feature in a row, with no change in the training metric,
      before it leaves the pool (RankLib's "max consecutive selection count", 5);
    * ``enqueue``: RankLib's first phase that queues a feature picked twice in a row (its
      default, true); false: RankLib's ``-noeq``, every round as the second phase's;
    * ``seed``: unused (the algorithm is deterministic), taken like every ranker's.

    With a validation split the model is the prefix of rounds with the best validation metric
    (checked every round; a rollback starts the search afresh, as RankLib's). The query weights
    follow the paper: P(q) proportional to exp(-E(q, model)) (RankLib multiplies the previous
    weights by exp(-alpha_t E(q, model)) instead). History: one dict per round: ``feature``
    (0-based), ``phase`` (1, 2), ``alpha``, ``train_<metric>``, ``objective`` (1 - it), ``vali_<metric>``; a rolled-back
    round has ``rolled_back`` 1, a round that stopped its phase ``stopped`` 1, a pick after which
    the feature left the pool ``removed`` 1. ``objective_trace_``: 1 -
    the training metric before any round (every score tied: data order) and of the kept model."""

    kind = "adarank"
    parameters = {
        "metric": Param(metric_constraint(), "ndcg@10", help="the metric boosted"),
        "n_rounds": Param(Integer(1), 500, space=IntRange(50, 1000, log=True), help="rounds in all"),
        "tolerance": Param(Real(0), 0.002, space=LogUniform(1e-4, 1e-2)),
        "max_consecutive": Param(Integer(1), 5),
        "enqueue": Param(Boolean(), True, help="RankLib's trainWithEnqueue (false: its -noeq, the paper's rounds)"),
        "rel_threshold": Param(Real(), 1.0),
        "seed": SEED,
    }

    def per_query(self, scores: np.ndarray, data: RankData) -> np.ndarray:
        return per_query(scores, data.y, data.offsets, [self.metric], rel_threshold=self.rel_threshold)[self.metric]

    def weak_metrics(self, data: RankData) -> np.ndarray:
        """E(q, f) for every feature f (rows) and query q (columns): each feature's own ranking."""
        return np.stack([self.per_query(data.X[:, f], data) for f in range(data.n_features)])

    def fit(self, train: RankData, vali: RankData | None = None) -> "AdaRank":
        if vali is not None and vali.n_features != train.n_features:
            raise ValueError(f"adarank: validation split has {vali.n_features} features, "
                             f"training split {train.n_features}")
        run = _Boosting(self, train, vali)
        run.train()
        features, alphas = run.kept()
        self._set_state({"features": features, "alphas": alphas, "n_features": train.n_features})
        self.history_ = run.history
        start = float(self.per_query(np.zeros(len(train.y)), train).mean())
        self.objective_trace_ = {"start": 1.0 - start, "final": 1.0 - float(self.per_query(self.predict(train), train).mean())}
        return self

    def predict(self, data: RankData) -> np.ndarray:
        if not hasattr(self, "alphas_"):
            raise NotFittedError("AdaRank is not fitted")
        if data.n_features != self.n_features_:
            raise ValueError(f"adarank: expected {self.n_features_} features, got {data.n_features}")
        return matvec64(data.X, feature_weights(self.features_, self.alphas_, self.n_features_))

    def _get_state(self) -> dict:
        return {"features": self.features_.tolist(), "alphas": self.alphas_.tolist(), "n_features": self.n_features_}

    def _set_state(self, state: dict) -> None:
        self.features_ = np.asarray(state["features"], dtype=np.int64)
        self.alphas_ = np.asarray(state["alphas"], dtype=np.float64)
        self.n_features_ = int(state["n_features"])


class _Boosting:
    """One AdaRank training run: the rounds, the query weights and RankLib's bookkeeping."""

    def __init__(self, ranker: AdaRank, train: RankData, vali: RankData | None) -> None:
        self.ranker, self.train_data, self.vali = ranker, train, vali
        self.E = ranker.weak_metrics(train)  # (d, Q)
        n_queries = self.E.shape[1]
        self.P = np.full(n_queries, 1.0 / n_queries)
        self.backup_P, self.backup_score = self.P.copy(), -1.0
        self.last_score = -1.0  # RankLib's: the first round is always taken
        self.last_feature, self.repeats = -1, 0
        self.queue: list[int] = []
        self.removed: set[int] = set()
        self.features: list[int] = []
        self.alphas: list[float] = []
        self.best_vali, self.best_rounds = -np.inf, 0
        self.history: list[dict] = []
        self.t = 0
        self.key = f"train_{ranker.metric}"
        self.progress = Progress("adarank", total=int(ranker.n_rounds), unit="round")

    def train(self) -> None:
        if not self.ranker.enqueue:  # RankLib's -noeq: every round as the second phase's
            self.phase(enqueue=False)
            return
        self.phase(enqueue=True)
        while self.queue:  # the queued features come back, the last queued first
            self.queue.pop()
            self.phase(enqueue=False)

    def kept(self) -> tuple[list[int], list[float]]:
        n = self.best_rounds if self.vali is not None and self.best_rounds > 0 else len(self.features)
        return self.features[:n], self.alphas[:n]

    def pick(self) -> int | None:
        """The feature with the highest weighted metric among those neither queued nor removed
        (the first such on ties, as RankLib's strict comparison)."""
        weighted = self.E @ self.P
        weighted[list(set(self.queue) | self.removed)] = -np.inf
        best = int(np.argmax(weighted))
        return None if weighted[best] == -np.inf else best

    def model_scores(self, data: RankData) -> np.ndarray:
        # float32 features cast a chunk at a time: a float64 copy of the split was 185 MB at Istella 1/64
        return matvec64(data.X, feature_weights(self.features, self.alphas, data.n_features))

    def phase(self, enqueue: bool) -> None:
        ranker, metric = self.ranker, self.ranker.metric
        while self.t < int(ranker.n_rounds):
            self.t += 1
            f = self.pick()
            if f is None:
                return
            if enqueue:
                if f == self.last_feature:
                    # "too strong": queue it and roll its previous pick back
                    self.queue.append(f)
                    self.features.pop()
                    self.alphas.pop()
                    self.P, self.last_score = self.backup_P.copy(), self.backup_score
                    self.best_vali, self.best_rounds = -np.inf, 0
                    self.history.append({"step": self.t, "phase": 1, "feature": f, "rolled_back": 1})
                    continue
                self.last_feature, self.backup_P, self.backup_score = f, self.P.copy(), self.last_score
            e = self.E[f]
            alpha = 0.5 * np.log((self.P @ (1 + e)) / max(float(self.P @ (1 - e)), DENOM_FLOOR))
            self.features.append(f)
            self.alphas.append(float(alpha))
            E_model = ranker.per_query(self.model_scores(self.train_data), self.train_data)
            score = float(E_model.mean())
            entry = {"step": self.t, "phase": 1 if enqueue else 2, "feature": f, "alpha": float(alpha), self.key: score,
                     "objective": 1.0 - score}
            if not enqueue and self.count_repeats(f, score):
                entry["removed"] = 1
            if self.vali is not None:
                vali = float(ranker.per_query(self.model_scores(self.vali), self.vali).mean())
                entry[f"vali_{metric}"] = vali
                if vali > self.best_vali:
                    self.best_vali, self.best_rounds = vali, len(self.features)
            self.history.append(entry)
            if self.vali is not None:
                intermediate.report(self.t, entry[f"vali_{metric}"])  # for tuning's pruner
            self.progress.update(self.t, **{metric: score})
            if score + ranker.tolerance - self.last_score <= 0:
                # the metric fell by tolerance or more: drop this round and stop the phase
                entry["stopped"] = 1
                self.features.pop()
                self.alphas.pop()
                self.best_rounds = min(self.best_rounds, len(self.features))
                return
            self.last_score = score
            weights = np.exp(-E_model)
            self.P = weights / weights.sum()

    def count_repeats(self, f: int, score: float) -> bool:
        """RankLib's second phase: a feature picked again ``max_consecutive`` times in a row
        with no change in the training metric leaves the pool (True); any change brings every
        feature back."""
        removed = False
        if score != self.last_score:
            self.repeats = 0
            self.removed.clear()
        elif f == self.last_feature:
            self.repeats += 1
            if self.repeats == int(self.ranker.max_consecutive):
                self.repeats = 0
                self.removed.add(f)
                removed = True
        else:
            self.repeats = 0
            self.removed.clear()
        self.last_feature = f
        return removed
