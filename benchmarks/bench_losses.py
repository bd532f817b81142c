"""Speed of the ranking losses and of LinearRanker's L-BFGS iterations.

Generates a synthetic data set (query lengths uniform in [--min-len, --max-len],
default 10-150 documents as in LETOR/MSLR, labels 0-4 from a noisy linear utility)
and reports, for each loss in ``rankstudy.losses.registry.LOSSES``:

* ``loss s/100k``: one loss value + gradient on the padded (Q, L) scores;
* ``objective s/100k``: one LinearRanker objective + gradient (scatter X w into the
  padded layout, loss, X^T grad), i.e. what L-BFGS pays per function evaluation;
* ``lbfgs s/iter/100k``: wall time of ``LinearRanker.fit`` divided by its iterations
  (``tol=0`` so it runs ``--iters`` iterations), plus function evaluations per iteration.

All times are medians, scaled to 100,000 documents, and also given relative to
``X.T @ v`` on the same data in the same process (``x ref`` columns), so figures are
comparable across noisy or shared machines.

    PYTHONPATH=src python benchmarks/bench_losses.py [--docs 100000] [--features 46]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.data.blocks import pad
from rankstudy.losses.registry import LOSSES
from rankstudy.rankers.linear import LinearRanker
from timing import median_of


def make_data(n_docs: int, n_features: int, min_len: int, max_len: int, seed: int) -> RankData:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_len, max_len + 1, n_docs // min_len + 1)
    lengths = lengths[: int(np.searchsorted(np.cumsum(lengths), n_docs)) + 1]
    lengths[-1] -= lengths.sum() - n_docs  # exactly n_docs rows
    lengths = lengths[lengths > 0]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    X = rng.normal(size=(n_docs, n_features))
    w = rng.normal(size=n_features)
    utility = X @ w + 0.5 * np.linalg.norm(w) * rng.normal(size=n_docs)
    y = np.digitize(utility, np.quantile(utility, [0.6, 0.8, 0.92, 0.98])).astype(float)
    return RankData(X=X, y=y, qid=np.repeat(np.arange(len(lengths)), lengths),
                    docid=np.arange(n_docs).astype(str), offsets=offsets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=46)
    parser.add_argument("--min-len", type=int, default=10)
    parser.add_argument("--max-len", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--iters", type=int, default=10, help="L-BFGS iterations per fit")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args()

    data = make_data(args.docs, args.features, args.min_len, args.max_len, args.seed)
    per_100k = 100_000 / args.docs
    rng = np.random.default_rng(args.seed + 1)
    v = rng.normal(size=args.docs)
    reference = median_of(lambda: data.X.T @ v, args.repeats * 3)
    labels, mask = pad(data.y, data.offsets)
    scores, _ = pad(data.X @ rng.normal(size=args.features) * 0.3, data.offsets)

    print(f"{args.docs} docs, {data.n_queries} queries (lengths {data.query_lengths.min()}-"
          f"{data.query_lengths.max()}), {args.features} features, padded {labels.shape}")
    print(f"reference X.T @ v: {reference * per_100k * 1e3:.3f} ms per 100k docs\n")
    header = (f"{'loss':<14}{'loss s/100k':>13}{'x ref':>8}{'objective s/100k':>18}{'x ref':>8}"
              f"{'lbfgs s/iter/100k':>19}{'x ref':>8}{'fev/iter':>10}")
    print(header)
    print("-" * len(header))
    results = {"docs": args.docs, "queries": data.n_queries, "features": args.features,
               "reference_seconds_per_100k": reference * per_100k, "losses": {}}
    for name, loss in LOSSES.items():
        loss_s = median_of(lambda: loss(scores, labels, mask), args.repeats)
        ranker = LinearRanker(loss=name, max_iter=args.iters, tol=0.0)
        objective = ranker.objective(data)
        theta = 0.01 * rng.normal(size=objective.n_params)
        objective_s = median_of(lambda: objective(theta), args.repeats)
        start = time.perf_counter()
        ranker.fit(data)
        fit_s = time.perf_counter() - start
        iters = max(ranker.n_iter_, 1)
        n_fev = ranker.n_fev_
        iter_s = fit_s / iters
        row = {"loss_seconds_per_100k": loss_s * per_100k, "objective_seconds_per_100k": objective_s * per_100k,
               "lbfgs_seconds_per_iter_per_100k": iter_s * per_100k, "lbfgs_iterations": ranker.n_iter_,
               "evaluations_per_iter": n_fev / iters}
        results["losses"][name] = row
        print(f"{name:<14}{row['loss_seconds_per_100k']:>13.4f}{loss_s / reference:>8.1f}"
              f"{row['objective_seconds_per_100k']:>18.4f}{objective_s / reference:>8.1f}"
              f"{row['lbfgs_seconds_per_iter_per_100k']:>19.4f}{iter_s / reference:>8.1f}"
              f"{row['evaluations_per_iter']:>10.2f}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(f"\npeak RSS {peak_mb:.0f} MB (X alone: {data.X.nbytes / 2**20:.0f} MB)")
    results["peak_rss_mb"] = peak_mb
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
