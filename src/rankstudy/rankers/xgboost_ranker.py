"""XGBoost's learning-to-rank objectives (``rank:ndcg``, ``rank:pairwise``, ``rank:map``) wrapped
as a ranker, from the ``gbdt`` extra (``pip install 'rankstudy[gbdt]'``): ``xgboost.train`` on a
query-grouped ``QuantileDMatrix``, early stopping on the validation split's NDCG@10, the booster cut back
to its best iteration."""

from __future__ import annotations

import base64

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.rankers.base import NotFittedError, Ranker
from rankstudy.rankers.boosting import gbdt_library, integer_labels
from rankstudy.util import intermediate
from rankstudy.util.params import SEED, Choice, Integer, IntRange, LogUniform, Param, Real, Uniform
from rankstudy.util.progress import Progress
from rankstudy.util.threads import job_threads

OBJECTIVES = ("rank:ndcg", "rank:pairwise", "rank:map")


def xgboost():
    return gbdt_library("xgboost", "xgboost")


class XGBoostRanker(Ranker):
    """Gradient-boosted trees with one of XGBoost's ranking objectives, ``tree_method="hist"``,
    on the job's threads (:func:`~rankstudy.util.threads.job_threads`; the same model on 1 and 2
    threads, tested). The declared defaults are rankstudy's, not XGBoost's where they differ:
    learning rate 0.05 (XGBoost's eta: 0.3) and at most 300 rounds (``xgboost.train``: 10) with
    early stopping after 30 (XGBoost: none); parameters not declared here keep XGBoost's defaults
    (the lambdarank pair sampling among them).

    With ``vali``, training stops when the validation NDCG@10 (XGBoost's ``ndcg@10``: gains
    2^r - 1, a query without a relevant document counts 1) has not improved for
    ``early_stopping_rounds`` rounds, and the booster is cut back to the best iteration;
    without it all ``n_estimators`` rounds are kept. ``rank:map`` takes binary labels only:
    it trains on ``label >= 1`` (the validation split keeps its grades for early stopping).

    History: one dict per round with ``train_ndcg@10``, ``vali_ndcg@10`` and ``objective``,
    1 - the training NDCG@10 (XGBoost reports no value of its ranking objectives); its start is
    XGBoost's training NDCG@10 before the first tree (every score equal: documents in input
    order). ``best_iteration_`` is the number of rounds kept."""

    kind = "xgboost"
    parallel = True
    eval_at = 10
    metric = f"ndcg@{eval_at}"

    library = "XGBoost"
    # ``library``: xgboost.train's own defaults (XGBoost 3: 10 rounds, eta 0.3, no early stopping)
    parameters = {
        "objective": Param(Choice(OBJECTIVES, "objective"), "rank:ndcg", help="XGBoost's ranking objective"),
        "n_estimators": Param(Integer(1), 300, help="boosting rounds at most", library="10"),
        "learning_rate": Param(Real(0, low_open=True), 0.05, space=LogUniform(0.01, 0.3), library="0.3"),
        "max_depth": Param(Integer(0), 6, space=IntRange(2, 10), help="tree depth at most, 0 for none", library="6"),
        "max_leaves": Param(Integer(0), 0, space=IntRange(8, 256, log=True), help="leaves per tree at most, 0 for none",
                            library="0"),
        "min_child_weight": Param(Real(0), 1.0, space=LogUniform(0.01, 10.0), library="1"),
        "reg_lambda": Param(Real(0), 1.0, space=LogUniform(1e-3, 10.0), help="XGBoost's lambda (L2 on leaf values)",
                            library="1"),
        "subsample": Param(Real(0, 1, low_open=True), 1.0, space=Uniform(0.5, 1.0), library="1"),
        "colsample_bytree": Param(Real(0, 1, low_open=True), 1.0, space=Uniform(0.5, 1.0), library="1"),
        "early_stopping_rounds": Param(Integer(1), 30, library="none"),
        "seed": SEED,
    }

    def xgboost_params(self) -> dict:
        return {
            "objective": self.objective, "eval_metric": self.metric, "tree_method": "hist",
            "learning_rate": self.learning_rate, "max_depth": self.max_depth, "max_leaves": self.max_leaves,
            "min_child_weight": self.min_child_weight, "lambda": self.reg_lambda, "subsample": self.subsample,
            "colsample_bytree": self.colsample_bytree, "seed": self.seed, "nthread": job_threads(),
        }

    def dmatrix(self, data: RankData, training: bool = False, reference=None):
        """The split as XGBoost's quantised matrix, queries given by their lengths (XGBoost needs
        them contiguous, as RankData keeps them; ``qid`` would also need them sorted by id).
        ``QuantileDMatrix`` holds the histogram bins only, where a ``DMatrix`` also holds a float32
        copy of the features (on Istella's 7.3M training documents, 6 GB); the validation split is
        binned by the training split's cuts (``reference``), as the ``hist`` method bins it."""
        labels = integer_labels(data.y, "xgboost")
        if training and self.objective == "rank:map":
            labels = (labels >= 1).astype(np.int32)
        return xgboost().QuantileDMatrix(data.X, label=labels, group=data.query_lengths, nthread=job_threads(),
                                         ref=reference)

    def fit(self, train: RankData, vali: RankData | None = None) -> "XGBoostRanker":
        xgb = xgboost()
        params = self.xgboost_params()
        dtrain = self.dmatrix(train, training=True)
        evals = [(dtrain, "train")] + ([(self.dmatrix(vali, reference=dtrain), "vali")] if vali is not None else [])
        progress = Progress(f"xgboost {self.objective}", total=int(self.n_estimators), unit="round")

        metric_name = self.metric

        class Report(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log) -> bool:
                progress.update(epoch + 1, **{f"{name}_{metric}": values[-1] for name, log in evals_log.items()
                                              for metric, values in log.items()})
                if "vali" in evals_log:  # what early stopping watches (an NDCG or MAP), for tuning's pruner
                    intermediate.report(epoch + 1, evals_log["vali"][metric_name][-1])
                return False  # go on

        record: dict = {}
        # XGBoost's early stopping watches the last of ``evals``: the validation split
        booster = xgb.train(params, dtrain, num_boost_round=int(self.n_estimators), evals=evals,
                            early_stopping_rounds=int(self.early_stopping_rounds) if vali is not None else None,
                            evals_result=record, verbose_eval=False, callbacks=[Report()])
        kept = booster.best_iteration + 1 if vali is not None else booster.num_boosted_rounds()
        # keep only the best rounds, so predict() and the saved model agree
        self.booster_, self.best_iteration_ = booster[:kept], kept
        objective = [1.0 - float(v) for v in record["train"][self.metric]]
        self.history_ = [
            {"step": i + 1, **{f"{name}_{metric}": float(values[i]) for name, log in record.items()
                               for metric, values in log.items()}, "objective": objective[i]}
            for i in range(len(objective))
        ]
        # no tree yet: every score equal (the base score)
        before = xgb.train(params, dtrain, num_boost_round=0).eval(dtrain, "train")
        start = 1.0 - float(before.rsplit(":", 1)[1])
        self.objective_trace_ = {"start": start, "final": objective[kept - 1]}
        return self

    def predict(self, data: RankData) -> np.ndarray:
        if not hasattr(self, "booster_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted")
        if data.n_features != self.booster_.num_features():
            raise ValueError(f"expected {self.booster_.num_features()} features, got {data.n_features}")
        self.booster_.set_param({"nthread": job_threads()})
        matrix = xgboost().DMatrix(data.X, nthread=job_threads())
        return np.asarray(self.booster_.predict(matrix), dtype=np.float64)

    def _get_state(self) -> dict:
        # XGBoost's own default format (UBJSON, binary: the floats exactly as trained)
        raw = bytes(self.booster_.save_raw("ubj"))
        return {"model_ubj_base64": base64.b64encode(raw).decode("ascii"), "best_iteration": self.best_iteration_}

    def _set_state(self, state: dict) -> None:
        self.booster_ = xgboost().Booster(model_file=bytearray(base64.b64decode(state["model_ubj_base64"])))
        self.best_iteration_ = int(state["best_iteration"])
