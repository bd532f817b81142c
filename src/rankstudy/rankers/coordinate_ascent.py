"""Coordinate Ascent (Metzler and Croft, Information Retrieval 2007), as RankLib's CoorAscent:
a linear model w'x trained directly on a ranking metric by line searches over one weight at a
time, with restarts.

A line search on feature j tries w_j + t for t = +-step (2^k - 1), k = 1..``line_steps`` (step
0.001, or 0.05 |w_j| when 0.001 would exceed half of |w_j|), and w_j = 0; it takes the best
trial that beats the current training metric (the first direction that improves wins, as in
RankLib). Only w_j changes, so a trial's scores are s + t x_j: one axpy and one evaluation of
the metric for every training query at once, never a matrix product. A metric with a cutoff
(ndcg@k, err@k, mrr@k, p@k) is evaluated on each query's top k alone
(:mod:`rankstudy.evaluation.top_ranking`: the documents that can reach the top are those at
least as good as the top k of the trial before, a few times k a query, sorted instead of the
whole query), with the same values to the last bit as a full sort, so the same steps are taken;
other metrics sort every query (:func:`rankstudy.evaluation.metrics.per_query`). After a
successful search the weights are rescaled to sum |w| = 1 (the ranking does not change). Scores
are recomputed from the weights after every pass so the incremental updates cannot drift.
"""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.metrics import parse_metric, per_query, per_query_ranked
from rankstudy.evaluation.top_ranking import TOP_METRICS, TopRanker
from rankstudy.rankers.base import NotFittedError, Ranker
from rankstudy.util import intermediate
from rankstudy.util.params import SEED, Integer, IntRange, Param, Real, Text, Uniform
from rankstudy.util.progress import Progress

STEP = 0.001  # RankLib's first step
STEP_BASE = 0.05  # RankLib's stepBase: the first step relative to |w_j| when that is small
STEP_SCALE = 2.0  # RankLib's stepScale: each step doubles


class TrainingMetric:
    """The training metric of the many trial scores of line searches on one split. A metric that
    reads only each query's top k (ndcg@k, err@k, mrr@k, p@k) ranks only that top
    (:class:`~rankstudy.evaluation.top_ranking.TopRanker`, bit for bit the values of a full
    ranking), from a hint: the ranking of the scores evaluated last (``hint``, which the line
    search sets back to the model's ranking at each direction). Other metrics sort every query."""

    def __init__(self, ranker: "CoordinateAscent", data: RankData) -> None:
        self.ranker, self.data = ranker, data
        base, k = parse_metric(ranker.metric)
        self.top = TopRanker(data.y, data.offsets, k) if base in TOP_METRICS and k is not None else None
        self.hint = None

    def mean_metric(self, scores: np.ndarray) -> float:
        if self.top is None:
            return self.ranker.mean_metric(scores, self.data)
        ranking = self.top.rank(scores, self.hint)
        self.hint = ranking
        values = per_query_ranked(ranking, [self.ranker.metric], rel_threshold=self.ranker.rel_threshold)
        return float(values[self.ranker.metric].mean())


def metric_constraint() -> Text:
    return Text(parse_metric, "a metric name (ndcg@k, err@k, mrr, map, p@k, auc, ...)")


class CoordinateAscent(Ranker):
    """* ``metric``: the training metric, any name :func:`~rankstudy.evaluation.metrics.parse_metric`
      takes (``rel_threshold``, the run's ``evaluation.rel_threshold`` in the pipeline, sets
      binary relevance for MAP, MRR, P@k, AUC; queries without a relevant document count 0);
    * ``restarts``: RankLib's restarts (5): each starts from uniform weights 1/d and visits the
      features in a fresh random order (``seed``) on every pass; with a validation split the
      restart with the best validation metric is kept, else the best training score;
    * ``max_iter``: at most this many passes over the features per restart; a restart also
      ends when a pass gains less than ``tolerance`` (0.001) in the training score (RankLib
      stops on the gain since the restart's start, or when d - 1 searches in a row fail);
    * ``line_steps``: trial steps per direction of a line search (RankLib's ``-i``, 25);
    * ``regularization``: RankLib's ``-reg`` slack: the training score is the metric minus
      slack * ||w/|w|_1 - u||_2, u the uniform start (0: off).

    History: one dict per pass (``restart``, ``pass``, ``train_<metric>``, ``objective`` (1 - it);
    pass 0 is the start; a restart's last pass also has ``vali_<metric>`` with a validation split).
    ``objective_trace_``: 1 - the training metric at the uniform start and of the model kept."""

    kind = "coordinate_ascent"
    trial_metric = TrainingMetric  # what evaluates the trials (a benchmark counts them)
    parameters = {
        "metric": Param(metric_constraint(), "ndcg@10", help="the training metric"),
        "restarts": Param(Integer(1), 5, space=IntRange(1, 10)),
        "max_iter": Param(Integer(1), 25, space=IntRange(5, 50), help="passes over the features per restart"),
        "line_steps": Param(Integer(1), 25),
        "tolerance": Param(Real(0), 0.001),
        "regularization": Param(Real(0), 0.0, space=Uniform(0.0, 0.1), help="RankLib's -reg slack (0: off)"),
        "rel_threshold": Param(Real(), 1.0),
        "seed": SEED,
    }

    # ------------------------------------------------------------------ the pieces

    def mean_metric(self, scores: np.ndarray, data: RankData) -> float:
        values = per_query(scores, data.y, data.offsets, [self.metric], rel_threshold=self.rel_threshold)
        return float(values[self.metric].mean())

    def penalty(self, w: np.ndarray) -> float:
        """RankLib's regulariser: slack times the distance of the L1-normalised weights from
        the uniform start."""
        if not self.regularization:
            return 0.0
        total = np.abs(w).sum()
        direction = w / total if total > 0 else w
        return float(self.regularization * np.linalg.norm(direction - 1.0 / len(w)))

    def trial_steps(self, w_j: float, direction: int) -> np.ndarray:
        """The total changes a line search tries in one direction (+1, -1; 0: drop the feature)."""
        if direction == 0:
            return np.array([-w_j])
        step = STEP * direction
        if w_j != 0.0 and abs(step) > 0.5 * abs(w_j):
            # RankLib writes stepBase * |w_j| here and so loses the direction; we keep it
            step = direction * STEP_BASE * abs(w_j)
        return step * (STEP_SCALE ** np.arange(1, int(self.line_steps) + 1) - 1.0) / (STEP_SCALE - 1.0)

    def line_search(self, w: np.ndarray, s: np.ndarray, j: int, score: float, train: RankData):
        """The best change of w_j that beats ``score`` (0.0 if none does) and its score."""
        trials = self._trials(train)
        x_j, best_t, best = np.ascontiguousarray(train.X[:, j]), 0.0, score
        trial = w.copy()
        start, best_ranking = trials.hint, None
        for direction in (1, -1, 0):
            trials.hint = start  # each direction starts from the model's ranking
            for t in self.trial_steps(float(w[j]), direction):
                trial[j] = w[j] + t
                value = trials.mean_metric(s + t * x_j) - self.penalty(trial)
                if value > best:
                    best_t, best, best_ranking = float(t), value, trials.hint
            if best_t != 0.0:
                break
        trials.hint = best_ranking if best_ranking is not None else start
        return best_t, best

    def _trials(self, train: RankData) -> TrainingMetric:
        if getattr(self, "_trial_metric", None) is None or self._trial_metric.data is not train:
            self._trial_metric = self.trial_metric(self, train)
        return self._trial_metric

    # ------------------------------------------------------------------ fit

    def fit(self, train: RankData, vali: RankData | None = None) -> "CoordinateAscent":
        if vali is not None and vali.n_features != train.n_features:
            raise ValueError(f"coordinate_ascent: validation split has {vali.n_features} features, "
                             f"training split {train.n_features}")
        d = train.n_features
        rng = np.random.default_rng(self.seed)
        uniform = np.full(d, 1.0 / d)
        start_metric = self.mean_metric(train.X @ uniform, train)
        history, kept, kept_key, passes = [], None, -np.inf, 0
        progress = Progress("coordinate_ascent", total=int(self.restarts) * int(self.max_iter), unit="pass")
        for restart in range(int(self.restarts)):
            w = uniform.copy()
            s = train.X @ w
            score = start_metric - self.penalty(w)
            history.append({"step": len(history), "restart": restart, "pass": 0,
                            f"train_{self.metric}": start_metric, "objective": 1.0 - start_metric})
            for n_pass in range(1, int(self.max_iter) + 1):
                before = score
                for j in rng.permutation(d):
                    t, value = self.line_search(w, s, int(j), score, train)
                    if t != 0.0:
                        w[j] += t
                        s = s + t * np.ascontiguousarray(train.X[:, j])
                        score = value
                        total = np.abs(w).sum()
                        if total > 0:  # rescaling changes no ranking: the scores follow the weights
                            w /= total
                            s /= total
                s = train.X @ w  # exact again for the next pass: no drift from the updates
                metric = self.mean_metric(s, train)
                history.append({"step": len(history), "restart": restart, "pass": n_pass,
                                f"train_{self.metric}": metric, "objective": 1.0 - metric})
                progress.update(restart * int(self.max_iter) + n_pass, restart=restart + 1, score=score)
                if vali is not None and intermediate.listening():
                    # for tuning's pruner: the validation metric of the best model this fit has so far
                    passes += 1
                    intermediate.report(passes, max(kept_key, self.mean_metric(vali.X @ w, vali)))
                if score - before < self.tolerance:
                    break
            key = self.mean_metric(vali.X @ w, vali) if vali is not None else score
            if vali is not None:
                history[-1][f"vali_{self.metric}"] = key
            if key > kept_key:
                kept, kept_key = w.copy(), key
        self.coef_ = kept
        self.history_ = history
        self._trial_metric = None
        self.objective_trace_ = {"start": 1.0 - start_metric, "final": 1.0 - self.mean_metric(train.X @ kept, train)}
        return self

    def predict(self, data: RankData) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise NotFittedError("CoordinateAscent is not fitted")
        if data.n_features != len(self.coef_):
            raise ValueError(f"coordinate_ascent: expected {len(self.coef_)} features, got {data.n_features}")
        return data.X @ self.coef_

    def _get_state(self) -> dict:
        return {"coef": self.coef_.tolist()}

    def _set_state(self, state: dict) -> None:
        self.coef_ = np.asarray(state["coef"], dtype=np.float64)

