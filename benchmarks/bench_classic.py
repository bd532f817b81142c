"""Coordinate Ascent and AdaRank against their floor: one evaluation of the training metric over
the whole training split (one ``per_query`` call on the model's scores), measured in the same run.

    python benchmarks/bench_classic.py [--data ../shared/data/OHSUMED/QueryLevelNorm] [--fold 1]
        [--metric ndcg@10] [--passes 2] [--rounds 200] [--repeats 3]

A CA pass is many line-search trials, each one axpy plus one metric evaluation (for a metric
with a cutoff, on each query's top k only: ``evaluation.top_ranking``, so a trial can cost less
than the floor); so the table gives seconds per pass, the trials per pass, and seconds per trial
as a multiple of the floor. An AdaRank round is a (d, Q) x (Q,)
pick, one (n, d) product and one metric evaluation, so seconds per round over the floor; its
one-off setup (every feature's per-query metric: d evaluations) is reported apart. Training
splits are read as LETOR files, QueryLevelNorm as shipped. Times: the best of ``--repeats``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from timing import best_of

from rankstudy.data.letor import read_letor
from rankstudy.evaluation.metrics import per_query
from rankstudy.rankers.adarank import AdaRank
from rankstudy.rankers.coordinate_ascent import CoordinateAscent, TrainingMetric

ROOT = Path(__file__).resolve().parents[1]


class CountingTrials(TrainingMetric):
    """The training metric of line-search trials, counting its evaluations."""

    def mean_metric(self, scores):
        CountingCA.evaluations += 1
        return super().mean_metric(scores)


class CountingCA(CoordinateAscent):
    """Coordinate Ascent that counts its line-search trials."""

    kind = "coordinate_ascent"
    evaluations = 0
    trial_metric = CountingTrials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "OHSUMED" / "QueryLevelNorm")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--features", type=int, default=45, help="features per document (OHSUMED: 45)")
    parser.add_argument("--metric", default="ndcg@10")
    parser.add_argument("--passes", type=int, default=2, help="CA passes timed (one restart)")
    parser.add_argument("--rounds", type=int, default=200, help="AdaRank rounds timed")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    path = args.data / f"Fold{args.fold}" / "train.txt.gz"
    train = read_letor(path, n_features=args.features)
    n, d = train.X.shape
    print(f"{path}: {n} documents, {len(train.offsets) - 1} queries, {d} features; metric {args.metric}")

    # the floor: the mean of 100 evaluations on distinct score vectors like a line search's trials
    # (uniform weights plus a step on one feature), best of the repeats, so it is as steady-state
    # as the fits' own evaluations
    rng = np.random.default_rng(0)
    base = train.X.mean(axis=1)
    trials = [base + rng.choice([-1, 1]) * 0.001 * 2.0 ** rng.integers(1, 25) * train.X[:, rng.integers(d)]
              for _ in range(100)]

    def evaluations():
        for s in trials:
            per_query(s, train.y, train.offsets, [args.metric])

    floor = best_of(evaluations, args.repeats, warmup=True) / len(trials)

    # CA: one restart, a fixed number of passes (tolerance 0 so it does not stop early unless
    # a whole pass fails)
    def ca():
        CountingCA.evaluations = 0
        return CountingCA(metric=args.metric, restarts=1, max_iter=args.passes, tolerance=0.0).fit(train)

    ca_seconds = best_of(ca, args.repeats)
    model = ca()
    passes = sum(1 for h in model.history_ if h["pass"] > 0)
    per_pass = CountingCA.evaluations / passes

    # AdaRank: setup (every feature's per-query metric) and the rounds after it
    ada = AdaRank(metric=args.metric, n_rounds=args.rounds, tolerance=1e9)  # never stops on the metric
    setup = best_of(lambda: ada.weak_metrics(train), args.repeats)
    ada_seconds = best_of(lambda: ada.fit(train), args.repeats)
    rounds = len(ada.fit(train).history_)
    per_round = (ada_seconds - setup) / rounds

    print(f"floor: one {args.metric} evaluation over the training split {floor * 1e3:.3f} ms (mean of 100)")
    print("| step | seconds | evaluations | s / evaluation | x floor |")
    print("|---|---|---|---|---|")
    print(f"| CA pass | {ca_seconds / passes:.3f} | {per_pass:.0f} trials | {ca_seconds / passes / per_pass * 1e3:.3f} ms "
          f"| {ca_seconds / passes / per_pass / floor:.2f} per trial, {ca_seconds / passes / floor:.0f} per pass |")
    print(f"| AdaRank round | {per_round * 1e3:.3f} ms | 1 | {per_round * 1e3:.3f} ms | {per_round / floor:.2f} |")
    print(f"| AdaRank setup | {setup:.3f} | {d} | {setup / d * 1e3:.3f} ms | {setup / floor:.1f} |")
    print(f"({passes} CA passes, {rounds} AdaRank rounds; best of {args.repeats}; {time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
    main()
