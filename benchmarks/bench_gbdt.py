"""The XGBoost and CatBoost rankers against their floors, measured in the same run: each
objective's fit (``make_ranker(kind, ...).fit(train, vali)``) beside the library's own call alone
on the same data and parameters (the call tests/test_gbdt_libraries.py checks it equals: the
DMatrix or Pool built, ``xgboost.train`` / ``CatBoost.fit`` with early stopping on the
validation split only), and beside our ``lambdamart`` (LightGBM's lambdarank) fit; then each
one's test NDCG@10 beside lambdamart's, with the paired difference over test queries.

    python benchmarks/bench_gbdt.py [--data ../shared/data/OHSUMED/QueryLevelNorm] [--fold 1]
        [--methods xgboost:rank:ndcg catboost:YetiRank ...] [--repeats 3] [--threads 1]

The ranker's overhead over the library call is what it adds: the training split evaluated every
round (the history's objective), the objective's start, cutting the model back, the labels'
check. Fits alternate (ours, library, lambdamart, ...) so all see the same background load;
medians of ``--repeats`` after one untimed warm-up each (the imports). ``--threads``: the job's
threads (a train job gives a GBDT ranker 1 thread below 32 MB of training features, OHSUMED's
fold is 3.4 MB). The models are checked equal to the library's before timing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from rankstudy.data.letor import read_letor
from rankstudy.evaluation.metrics import per_query
from rankstudy.rankers.registry import make_ranker
from rankstudy.util.threads import job_threads, use_job_threads

ROOT = Path(__file__).resolve().parents[1]
METHODS = ["xgboost:rank:ndcg", "xgboost:rank:pairwise", "xgboost:rank:map",
           "catboost:YetiRank", "catboost:YetiRankPairwise", "catboost:QuerySoftMax", "catboost:PairLogit",
           "catboost:LambdaMart"]


def ranker_params(method: str) -> tuple[str, dict]:
    kind, _, choice = method.partition(":")
    return kind, {"xgboost": {"objective": choice}, "catboost": {"loss": choice}}[kind]


def library_call(kind: str, ranker, train, vali, test):
    """The library's own call with the ranker's parameters, as a user would write it; returns
    a function fitting and giving the test scores."""
    if kind == "xgboost":
        import xgboost as xgb

        params = ranker.xgboost_params()
        labels = (train.y >= 1) if ranker.objective == "rank:map" else train.y

        def run():
            dtrain = xgb.DMatrix(train.X, label=labels, group=train.query_lengths, nthread=job_threads())
            dvali = xgb.DMatrix(vali.X, label=vali.y, group=vali.query_lengths, nthread=job_threads())
            booster = xgb.train(params, dtrain, ranker.n_estimators, evals=[(dvali, "vali")],
                                early_stopping_rounds=ranker.early_stopping_rounds, verbose_eval=False)
            return booster.predict(xgb.DMatrix(test.X), iteration_range=(0, booster.best_iteration + 1))
        return run
    import catboost as cb

    # the ranker asks CatBoost for the training NDCG too (its history); the plain call does not
    params = dict(ranker.catboost_params(), eval_metric="NDCG:top=10;type=Exp")

    def run():
        model = cb.CatBoost(params)
        model.fit(cb.Pool(train.X, label=train.y, group_id=train.qid),
                  eval_set=cb.Pool(vali.X, label=vali.y, group_id=vali.qid))
        return model.predict(test.X)
    return run


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/OHSUMED/QueryLevelNorm")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--methods", nargs="+", default=METHODS, help="kind:objective, e.g. xgboost:rank:ndcg")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    folder = args.data / f"Fold{args.fold}"
    train, vali, test = (read_letor(folder / f"{s}.txt.gz") for s in ("train", "vali", "test"))
    use_job_threads(args.threads)
    print(f"{folder}: train {train.X.shape[0]} x {train.X.shape[1]} ({train.n_queries} queries), "
          f"vali {vali.n_queries}, test {test.n_queries} queries; {job_threads()} thread(s), "
          f"medians of {args.repeats}")

    def test_ndcg(scores) -> np.ndarray:
        return per_query(np.asarray(scores, dtype=np.float64), test.y, test.offsets, ["ndcg@10"])["ndcg@10"]

    lambdamart = make_ranker("lambdamart").fit(train, vali)  # also the warm-up of LightGBM
    base = test_ndcg(lambdamart.predict(test))
    print("| method | rounds kept | ours s | library s | ours / library | lambdamart s | ours / lambdamart "
          "| test NDCG@10 | lambdamart's | difference (s.e.) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for method in args.methods:
        kind, params = ranker_params(method)
        ranker = make_ranker(kind, params).fit(train, vali)  # the warm-up (imports) and the check
        library = library_call(kind, ranker, train, vali, test)
        ours_scores = ranker.predict(test)
        if not np.array_equal(ours_scores, np.asarray(library(), dtype=np.float64)):
            raise SystemExit(f"{method}: the ranker's test scores differ from the library call's")
        fits = {"ours": lambda: make_ranker(kind, params).fit(train, vali), "library": library,
                "lambdamart": lambda: make_ranker("lambdamart").fit(train, vali)}
        times: dict[str, list[float]] = {name: [] for name in fits}
        for _ in range(args.repeats):
            for name, fit in fits.items():
                times[name].append(timed(fit))
        t = {name: float(np.median(v)) for name, v in times.items()}
        scores = test_ndcg(ours_scores)
        diff = scores - base
        print(f"| {method} | {ranker.best_iteration_} | {t['ours']:.2f} | {t['library']:.2f} | "
              f"{t['ours'] / t['library']:.2f} | {t['lambdamart']:.2f} | {t['ours'] / t['lambdamart']:.2f} | "
              f"{scores.mean():.4f} | {base.mean():.4f} | {diff.mean():+.4f} ({diff.std(ddof=1) / np.sqrt(len(diff)):.4f}) |",
              flush=True)


if __name__ == "__main__":
    main()
