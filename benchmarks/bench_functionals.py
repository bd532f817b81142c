"""Benchmark: cost of the quadratic rank functional (Tran et al. 2011, Eq. 4) vs the linear one.

On synthetic MSLR-WEB30K-shaped data (``--docs`` documents, m = 136 features, queries
of 50-200 documents, labels 0-4) times one objective+gradient evaluation of
``LinearRanker(...).objective(train)`` -- the unit of work of each L-BFGS step -- for

* the linear functional w'x,
* the quadratic functional w'x + sum_k c_k x_i x_j with |pairs| = 100 (random pairs,
  i.e. spread over many features: the unfavourable case for the dense-block method), and
* all m(m+1)/2 = 9,316 pairs (rho = 0 in the paper's Table 5),

with the default ``chunk_rows`` (8192), and reports seconds per 100k documents, both for
the whole objective (``--loss``, default ranknet = the paper's pairwise logistic) and for
the functional alone (``quadratic_scores`` + ``quadratic_vjp``). Also the peak traced
memory (tracemalloc, which sees numpy's allocations) of one 9,316-pair evaluation next to
the size of the n x 9,316 float64 product matrix that materialising the features would take.

BLAS runs on ``--threads`` threads (default 1, via threadpoolctl) because the machine is
shared; the ratios are the figures to read, absolute seconds move with the neighbours.

    PYTHONPATH=src python benchmarks/bench_functionals.py [--docs 100000 --loss ranknet --repeats 3]
"""

from __future__ import annotations

import argparse
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from rankstudy.data.rankdata import RankData
from rankstudy.scorers.quadratic import quadratic_scores, quadratic_vjp
from rankstudy.rankers.linear import LinearRanker
from timing import best_of

M = 136


def make_data(n_docs: int, seed: int = 0) -> RankData:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(50, 201, n_docs // 50 + 1)
    lengths = lengths[: int(np.searchsorted(np.cumsum(lengths), n_docs)) + 1]
    lengths[-1] -= int(lengths.sum()) - n_docs  # total exactly n_docs
    lengths = lengths[lengths > 0]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    X = rng.normal(size=(n_docs, M))
    utility = X[:, :10].sum(axis=1) + X[:, 0] * X[:, 1] + rng.normal(size=n_docs)
    y = np.digitize(utility, np.quantile(utility, [0.5, 0.75, 0.9, 0.97])).astype(float)
    return RankData(X=X, y=y, qid=np.repeat(np.arange(len(lengths)), lengths),
                    docid=np.arange(n_docs).astype(str), offsets=offsets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--loss", default="ranknet")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    data = make_data(args.docs)
    rng = np.random.default_rng(1)
    all_pairs = np.column_stack(np.triu_indices(M))
    cases = {
        "linear": None,
        "quadratic |pairs|=100": all_pairs[np.sort(rng.choice(len(all_pairs), 100, replace=False))],
        f"quadratic |pairs|={len(all_pairs)}": all_pairs,
    }
    per_100k = 100_000 / args.docs
    print(f"{args.docs} docs, {data.n_queries} queries, m = {M}, loss = {args.loss}, "
          f"BLAS threads = {args.threads}, best of {args.repeats}")
    print(f"{'functional':<26} {'params':>7} {'objective+grad s/100k':>22} {'x linear':>9} "
          f"{'functional only s/100k':>23}")
    baseline = None
    with threadpool_limits(args.threads):
        for name, pairs in cases.items():
            params = {"loss": args.loss}
            if pairs is not None:
                params.update(functional="quadratic", pairs=pairs.tolist())
            objective = LinearRanker(**params).objective(data)
            theta = 0.01 * rng.normal(size=objective.n_params)
            seconds = best_of(lambda: objective(theta), args.repeats) * per_100k
            baseline = baseline or seconds
            if pairs is None:
                w, g = theta[:M], rng.normal(size=args.docs)
                alone = best_of(lambda: (data.X @ w, data.X.T @ g), args.repeats) * per_100k
            else:
                c, g = theta[M:M + len(pairs)], rng.normal(size=args.docs)
                alone = best_of(lambda: (quadratic_scores(data.X, pairs, theta[:M], c),
                                              quadratic_vjp(data.X, pairs, g)), args.repeats) * per_100k
            print(f"{name:<26} {objective.n_params:>7} {seconds:>22.3f} {seconds / baseline:>8.1f}x "
                  f"{alone:>23.3f}")

        # peak memory of one full-pair evaluation (objective built outside the traced window,
        # so the padded labels/mask it caches are not counted; per-call temporaries are)
        for name, pairs in [("linear", None), (f"quadratic |pairs|={len(all_pairs)}", all_pairs)]:
            params = {"loss": args.loss}
            if pairs is not None:
                params.update(functional="quadratic", pairs=pairs.tolist())
            objective = LinearRanker(**params).objective(data)
            theta = 0.01 * rng.normal(size=objective.n_params)
            tracemalloc.start()
            objective(theta)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"peak traced memory, one evaluation, {name}: {peak / 2**20:.1f} MiB")
    materialised = args.docs * len(all_pairs) * 8
    print(f"materialised n x {len(all_pairs)} float64 product matrix: {materialised / 2**20:.0f} MiB "
          f"-> chunked quadratic peak is {peak / materialised:.4f} of it ({materialised / peak:.0f}x smaller)")


if __name__ == "__main__":
    main()
