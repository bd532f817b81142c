"""NDCG@10 (and P@10, MAP, MeanNDCG) of a simple scorer under our metrics beside LETOR's official
evaluation scripts' conventions (``letor3``, ``letor4`` of rankstudy.evaluation.conventions).

Two scorers on the test split of one fold of each data set: a linear RankSVM
(``LinearRanker(loss="ranksvm")``, trained on the fold's training split) and the single feature
with the best training NDCG@10 (its values as scores: many ties). Queries of MQ2008 are short (a
fifth have fewer than 10 documents), so NDCG@10 under ``letor4``, which counts those as 0, sits far
below ours; OHSUMED's queries are long and moves only with the discount.

    python -m rankstudy letor-conventions [--data-root ../shared/data] [--fold 1] [--predictions DIR]

``--predictions DIR`` also writes each scorer's test scores one per line (``%.17g``), beside the
test file's rows, so the Perl scripts themselves can be run on them:
``perl Eval-Score-4.0.pl test.txt DIR/MQ2008.ranksvm.txt out.txt 0``. Last measured: MQ2008
Fold1 RankSVM NDCG@10 .4836 under our metrics, .2125 under ``letor4``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from rankstudy.data.letor import read_letor
from rankstudy.evaluation import conventions
from rankstudy.rankers.linear import LinearRanker

DATASETS = {"OHSUMED": "OHSUMED/QueryLevelNorm", "MQ2008": "MQ2008"}
METRICS = ["ndcg@1", "ndcg@10", "p@10", "map", "meanndcg"]
CONVENTIONS = {"ours": {}, "letor3": "letor3", "letor4": "letor4"}


def best_feature(train) -> int:
    ndcg = [conventions.per_query(train.X[:, j], train.y, train.offsets, "ndcg@10", {}).mean()
            for j in range(train.n_features)]
    return int(np.argmax(ndcg))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-root", default="../shared/data")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--predictions", type=Path)


def run(args: argparse.Namespace) -> int:
    for name, folder in DATASETS.items():
        fold = Path(args.data_root) / folder / f"Fold{args.fold}"
        if not fold.exists():
            print(f"{name}: {fold} not found, skipped")
            continue
        train, test = read_letor(fold / "train.txt.gz"), read_letor(fold / "test.txt.gz")
        lengths = np.diff(test.offsets)
        feature = best_feature(train)
        scorers = {"ranksvm": LinearRanker(loss="ranksvm").fit(train).predict(test),
                   f"feature{feature + 1}": test.X[:, feature].astype(np.float64)}
        print(f"\n{name} Fold{args.fold} test: {len(lengths)} queries, {int((lengths < 10).sum())} with < 10 "
              f"documents, {int(sum(test.y[a:b].max() == 0 for a, b in zip(test.offsets[:-1], test.offsets[1:])))} "
              f"without a relevant one")
        print(f"{'scorer':<12}{'metric':<10}" + "".join(f"{c:>10}" for c in CONVENTIONS))
        for scorer, scores in scorers.items():
            if args.predictions:
                args.predictions.mkdir(parents=True, exist_ok=True)
                np.savetxt(args.predictions / f"{name}.{scorer}.txt", scores, fmt="%.17g")
            for metric in METRICS:
                values = [conventions.per_query(scores, test.y, test.offsets, metric, c).mean()
                          for c in CONVENTIONS.values()]
                print(f"{scorer:<12}{metric:<10}" + "".join(f"{v:>10.4f}" for v in values))
    return 0
