"""When do a LightGBM train job's threads pay? One `lambdamart` fit (the default config's
parameters, early stopping on the validation split) with 1 and with 2 threads, alone on the
machine, on training splits of growing size: the real LETOR folds when present and generated
136-feature folds. The train rule gives a parallel ranker its threads only from
`PARALLEL_MIN_MB` of training features on (workflow/rules/common.smk): below it, two jobs of
one thread side by side do more work per second than one job of two.

    python benchmarks/bench_lightgbm_threads.py [--data-root ../shared/data] [--queries 30 100 250 500]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from rankstudy.data.letor import read_letor
from rankstudy.data.rankdata import RankData
from rankstudy.rankers.registry import ranker_class
from rankstudy.util.threads import use_job_threads
from timing import best_of

PARAMS = {"n_estimators": 300, "learning_rate": 0.05, "min_data_in_leaf": 20, "num_leaves": 31}
FOLDS = {"MQ2008": "MQ2008/Fold1", "OHSUMED": "OHSUMED/Feature-min/Fold1"}


def generated(n_queries: int, seed: int, docs: int = 120, n_features: int = 136) -> RankData:
    """Graded labels from a noisy linear function of Gaussian features, ``docs`` per query."""
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, n_features))
    y = np.clip(np.round(X @ rng.normal(size=n_features) / np.sqrt(n_features) + rng.normal(size=n)), 0, 4)
    return RankData(X=X, y=y, qid=np.repeat(np.arange(n_queries), docs), docid=np.arange(n).astype(str),
                    offsets=np.arange(n_queries + 1) * docs)


def fit_seconds(train: RankData, vali: RankData, threads: int, repeats: int) -> float:
    def fit():
        use_job_threads(threads)
        ranker_class("lambdamart")(**PARAMS).fit(train, vali)
    return best_of(fit, repeats, warmup=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--queries", type=int, nargs="+", default=[30, 100, 250, 500])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    sets = []
    for name, fold in FOLDS.items():
        if (args.data_root / fold).is_dir():
            sets.append((f"{name} Fold1", read_letor(args.data_root / fold / "train.txt.gz"),
                         read_letor(args.data_root / fold / "vali.txt.gz")))
        else:
            print(f"{name}: {args.data_root / fold} not found, skipped")
    sets += [(f"generated {q} queries", generated(q, 0), generated(max(q // 4, 10), 1)) for q in args.queries]
    print("| training split | rows x features | MB of features | 1 thread s | 2 threads s | 2 threads / 1 |")
    print("|---|---|---|---|---|---|")
    for name, train, vali in sets:
        one, two = (fit_seconds(train, vali, t, args.repeats) for t in (1, 2))
        print(f"| {name} | {train.X.shape[0]} x {train.X.shape[1]} | {train.X.nbytes / 2**20:.1f} | "
              f"{one:.2f} | {two:.2f} | {two / one:.2f} |", flush=True)


if __name__ == "__main__":
    main()
