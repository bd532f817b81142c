"""CatBoost's ranking losses (``YetiRank``, ``YetiRankPairwise``, ``QuerySoftMax``, ``PairLogit``,
``LambdaMart``) wrapped as a ranker, from the ``gbdt`` extra (``pip install 'rankstudy[gbdt]'``):
``catboost.CatBoost.fit`` on query-grouped pools, early stopping on the validation split's
NDCG@10, the model cut back to its best iteration."""

from __future__ import annotations

import base64
import os
import tempfile

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.rankers.base import NotFittedError, Ranker
from rankstudy.rankers.boosting import gbdt_library
from rankstudy.util import intermediate
from rankstudy.util.params import SEED, Choice, Integer, IntRange, LogUniform, Param, Real
from rankstudy.util.progress import Progress
from rankstudy.util.threads import job_threads

LOSSES = ("YetiRank", "YetiRankPairwise", "QuerySoftMax", "PairLogit", "LambdaMart")
# NDCG@10 with the study's gains 2^r - 1 (CatBoost's default type, Base, gains r)
EVAL_METRIC = "NDCG:top=10;type=Exp"


def catboost():
    return gbdt_library("catboost", "catboost")


class CatBoostRanker(Ranker):
    """Oblivious trees boosted with one of CatBoost's ranking losses, on the job's threads
    (:func:`~rankstudy.util.threads.job_threads`; the same model on 1 and 2 threads, tested).
    The declared defaults are CatBoost's own for 1000 iterations, learning rate 0.03, depth 6 and
    random_strength 1 (YetiRankPairwise: CatBoost's is 0, where its docs say the parameter is not
    supported); l2_leaf_reg 3 is rankstudy's, passed for every loss: CatBoost's documented default
    is 3.0, but CatBoost sets its own to 0 (stored as 1e-20) for YetiRank, YetiRankPairwise and
    LambdaMart, and keeps 3 for QuerySoftMax and PairLogit (``get_all_params()`` of CatBoost
    1.2.10; ``SetLeavesEstimationDefault`` in its ``catboost_options.cpp``). Early stopping after 50
    iterations is rankstudy's too (CatBoost's overfitting detector is off unless set). Parameters
    not declared here keep CatBoost's defaults.

    With ``vali``, training stops when the validation NDCG@10 (gains 2^r - 1) has not improved
    for ``early_stopping_rounds`` iterations (``od_type="Iter"``) and the model keeps the best
    iteration (``use_best_model``); without it all ``iterations`` are kept.

    History: one dict per iteration with ``train_ndcg@10``, ``vali_ndcg@10``, the other values
    CatBoost reports under its names (the loss on both splits for QuerySoftMax and PairLogit)
    and ``objective``, 1 - the training NDCG@10 for every loss: CatBoost computes no value of
    YetiRank, YetiRankPairwise or LambdaMart, and one measure keeps the losses comparable. Its
    start is CatBoost's NDCG@10 of equal scores (``catboost.utils.eval_metric``), which ranks
    tied documents worst first: the worst ordering's value, not a random one's.
    ``best_iteration_`` is the number of iterations kept."""

    kind = "catboost"
    parallel = True
    eval_at = 10
    metric = f"ndcg@{eval_at}"

    library = "CatBoost"
    parameters = {
        "loss": Param(Choice(LOSSES, "loss"), "YetiRank", help="CatBoost's ranking loss"),
        "iterations": Param(Integer(1), 1000, help="boosting iterations at most", library="1000"),
        "learning_rate": Param(Real(0, low_open=True), 0.03, space=LogUniform(0.01, 0.3), library="0.03"),
        "depth": Param(Integer(1, 16), 6, space=IntRange(4, 10), help="depth of the oblivious trees", library="6"),
        "l2_leaf_reg": Param(Real(0), 3.0, space=LogUniform(0.1, 30.0),
                             library="3, but 0 (stored as 1e-20) for YetiRank, YetiRankPairwise and LambdaMart"),
        "random_strength": Param(Real(0), 1.0, space=LogUniform(0.01, 10.0), library="1, but 0 for YetiRankPairwise"),
        "early_stopping_rounds": Param(Integer(1), 50, library="none"),
        "seed": SEED,
    }

    def catboost_params(self) -> dict:
        return {
            "loss_function": self.loss, "iterations": self.iterations, "learning_rate": self.learning_rate,
            "depth": self.depth, "l2_leaf_reg": self.l2_leaf_reg, "random_strength": self.random_strength,
            "random_seed": self.seed, "thread_count": job_threads(),
            # NDCG is skipped on the training pool unless asked: its values are the objective
            "eval_metric": f"{EVAL_METRIC};hints=skip_train~false",
            "od_type": "Iter", "od_wait": self.early_stopping_rounds, "use_best_model": True,
            "allow_writing_files": False, "verbose": False,
        }

    @staticmethod
    def pool(data: RankData):
        # group_id must keep each query's documents contiguous, as RankData does
        return catboost().Pool(data.X, label=data.y, group_id=data.qid)

    def fit(self, train: RankData, vali: RankData | None = None) -> "CatBoostRanker":
        cb = catboost()
        params = self.catboost_params()
        if vali is None:
            params = {k: v for k, v in params.items() if k not in ("od_type", "od_wait", "use_best_model")}
        progress = Progress(f"catboost {self.loss}", total=int(self.iterations), unit="iteration")

        class Report:
            def after_iteration(self, info) -> bool:
                progress.update(info.iteration, **{f"{name}_{metric}": values[-1] for name, log in info.metrics.items()
                                                   for metric, values in log.items()})
                vali = info.metrics.get("validation", {})
                watched = next((values for metric, values in vali.items() if metric.startswith(EVAL_METRIC)), None)
                if watched:  # the NDCG@10 early stopping watches, for tuning's pruner
                    try:
                        intermediate.report(info.iteration, watched[-1])
                    except intermediate.Pruned as exc:  # raised after CatBoost's loop, which a callback stops
                        pruned.append(exc)
                        return False
                return True  # go on

        pruned: list = []
        model = cb.CatBoost(params)
        model.fit(self.pool(train), eval_set=self.pool(vali) if vali is not None else None, callbacks=[Report()])
        if pruned:
            raise pruned[0]
        self.model_, self.best_iteration_ = model, int(model.tree_count_)
        names = {"learn": "train", "validation": "vali"}
        record = {names[split]: {(self.metric if metric.startswith(EVAL_METRIC) else metric): values
                                 for metric, values in log.items()}
                  for split, log in model.get_evals_result().items()}
        objective = [1.0 - float(v) for v in record["train"][self.metric]]
        self.history_ = [
            {"step": i + 1, **{f"{name}_{metric}": float(values[i]) for name, log in record.items()
                               for metric, values in log.items()}, "objective": objective[i]}
            for i in range(len(objective))
        ]
        # no tree yet: every score equal
        eval_metric = gbdt_library("catboost.utils", "catboost").eval_metric
        before = eval_metric(train.y, np.zeros(len(train.y)), EVAL_METRIC, group_id=train.qid)[0]
        self.objective_trace_ = {"start": 1.0 - float(before), "final": objective[self.best_iteration_ - 1]}
        return self

    def predict(self, data: RankData) -> np.ndarray:
        if not hasattr(self, "model_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted")
        expected = len(self.model_.feature_names_)  # n_features_in_ is 0 in a loaded model
        if data.n_features != expected:
            raise ValueError(f"expected {expected} features, got {data.n_features}")
        return np.asarray(self.model_.predict(data.X, thread_count=job_threads()), dtype=np.float64)

    def _get_state(self) -> dict:
        # CatBoost writes its binary format only to a file
        with tempfile.TemporaryDirectory(prefix="rankstudy-catboost-") as folder:
            path = os.path.join(folder, "model.cbm")
            self.model_.save_model(path, format="cbm")
            with open(path, "rb") as f:
                raw = f.read()
        return {"model_cbm_base64": base64.b64encode(raw).decode("ascii"), "best_iteration": self.best_iteration_}

    def _set_state(self, state: dict) -> None:
        cb = catboost()
        model = cb.CatBoost()
        model.load_model(blob=base64.b64decode(state["model_cbm_base64"]))
        self.model_, self.best_iteration_ = model, int(state["best_iteration"])
