"""Benchmark: Tran et al.'s loss families and the quadratic functional (issue: rank functionals).

1. Seconds per objective+gradient evaluation per 100k documents of a LinearRanker for one
   representative configuration of every loss family in the registry (baseline, element-wise,
   pairwise with weights, WUB, smoothed metrics), and as a multiple of the pointwise loss's
   time on the same data in the same process (the noise-robust figure).
2. The quadratic functional at rho = 0.00, 0.10, 0.20: the pairs kept by the rho filter on data
   with m = 136 features whose labels depend on a few products, objective+gradient seconds per
   100k documents, and the ratio to the linear functional.
3. With --memory-docs N (e.g. 700000): a LinearRanker with the rho = 0.00 quadratic functional
   (all 9,316 pairs) trained for a few L-BFGS iterations on N documents x 136 features, with the
   process's peak resident memory beside the size the materialised n x 9,316 products would take.

    PYTHONPATH=src python benchmarks/bench_tran.py [--docs 100000] [--memory-docs 700000]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
from threadpoolctl import threadpool_limits

from rankstudy.data.rankdata import RankData
from rankstudy.features.pairs import pair_correlations, select_pairs
from rankstudy.rankers.linear import LinearRanker

M = 136
FAMILIES = {
    "pointwise_mse (reference)": {"loss": "pointwise_mse"},
    "ranknet": {"loss": "ranknet"},
    "listmle": {"loss": "listmle"},
    "multiclass_logistic": {"loss": "multiclass_logistic"},
    "wpl, W = sqrt_r": {"loss": "wpl", "loss_params": {"weight": "sqrt_r"}},
    "rpl, W = inv_log_pos": {"loss": "rpl", "loss_params": {"weight": "inv_log_pos"}},
    "wpll, W = r": {"loss": "wpll", "loss_params": {"weight": "r"}},
    "pairwise hinge, V = ndcg_swap": {"loss": "pairwise", "loss_params": {"phi": "hinge", "weight": "ndcg_swap"}},
    "pairwise logistic, V = exp_label_diff_n": {"loss": "pairwise", "loss_params": {"phi": "logistic", "weight": "exp_label_diff_n"}},
    "wub, V = inv_n": {"loss": "wub", "loss_params": {"weight": "inv_n"}},
    "smoothed_ndcg@10": {"loss": "smoothed_ndcg", "loss_params": {"k": 10}},
    "smoothed_err": {"loss": "smoothed_err"},
    "group mean + listmle": {"loss": "listmle", "group": "mean"},
}


def make_data(n_docs: int, seed: int = 0) -> RankData:
    """Queries of 10-150 documents, labels 0-4 from a utility with linear and product terms."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 151, n_docs // 10 + 1)
    lengths = lengths[: int(np.searchsorted(np.cumsum(lengths), n_docs)) + 1]
    lengths[-1] -= int(lengths.sum()) - n_docs
    lengths = lengths[lengths > 0]
    X = rng.normal(size=(n_docs, M))
    utility = X[:, :8].sum(axis=1) + 2 * (X[:, 8] * X[:, 9] + X[:, 10] * X[:, 11]) + rng.normal(size=n_docs)
    y = np.digitize(utility, np.quantile(utility, [0.5, 0.75, 0.9, 0.97])).astype(float)
    return RankData(X=X, y=y, qid=np.repeat(np.arange(len(lengths)), lengths),
                    docid=np.arange(n_docs).astype(str), offsets=np.concatenate([[0], np.cumsum(lengths)]))


def seconds_per_eval(ranker: LinearRanker, data: RankData, repeats: int = 3) -> float:
    objective = ranker.objective(data)
    theta = np.random.default_rng(1).normal(0, 0.01, objective.n_params)
    objective(theta)  # warm-up
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        objective(theta)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--memory-docs", type=int, default=0)
    args = parser.parse_args()
    per_100k = 100_000 / args.docs
    with threadpool_limits(1):
        data = make_data(args.docs)
        print(f"1. loss families: {args.docs:,} documents, {data.n_queries:,} queries, m = {M}")
        reference = None
        for name, params in FAMILIES.items():
            t = seconds_per_eval(LinearRanker(**params), data) * per_100k
            reference = reference or t
            print(f"   {name:42s} {t:8.4f} s/100k docs  {t / reference:6.1f} x reference")
        corr = pair_correlations(data.X, data.y)
        linear = seconds_per_eval(LinearRanker(loss="ranknet"), data) * per_100k
        print(f"2. quadratic functional (ranknet loss), linear = {linear:.4f} s/100k docs")
        for rho in (0.0, 0.10, 0.20):
            pairs = select_pairs(corr, rho)[["i", "j"]].to_numpy().tolist()
            t = seconds_per_eval(LinearRanker(loss="ranknet", functional="quadratic", pairs=pairs), data) * per_100k
            print(f"   rho = {rho:.2f}: {len(pairs):5d} pairs  {t:8.4f} s/100k docs  {t / linear:5.1f} x linear")
        if args.memory_docs:
            big = make_data(args.memory_docs, seed=1)
            pairs = np.array(np.triu_indices(M)).T.tolist()
            start = time.perf_counter()
            LinearRanker(loss="ranknet", functional="quadratic", pairs=pairs, max_iter=3).fit(big)
            seconds = time.perf_counter() - start
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
            data_gib = big.X.nbytes / 2**30
            materialised = args.memory_docs * len(pairs) * 8 / 2**30
            print(f"3. rho = 0.00 ({len(pairs):,} pairs) on {args.memory_docs:,} docs: 3 L-BFGS iterations in "
                  f"{seconds:.0f} s; peak RSS {peak:.2f} GiB (X itself {data_gib:.2f} GiB); the materialised "
                  f"products would take {materialised:.0f} GiB ({materialised / peak:.0f} x the peak)")


if __name__ == "__main__":
    main()
