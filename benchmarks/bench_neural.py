"""One training epoch of the MLP scorer on an MSLR-WEB30K-sized synthetic fold, beside its floor.

Data: ``--queries`` queries (MSLR-WEB30K Fold 1 trains on ~18,900) of 10..``--max-docs`` documents
(uniform; 240 is the list length of the NeuralNDCG paper's runs), ``--features`` features
(float32, as ``features.dtype: float32`` stores them), labels 0..4 cut from a noisy linear
utility. The ranker's default network (136 -> 64 -> 32 -> 1, ReLU) is trained for one epoch of
minibatch Adam (batches of ``--batch-size`` queries, ``--loss``), timed from the solver's own
history (the epoch alone: not the start-point objective, not building the data).

Floor, measured in the same run: the matrix products any implementation of the forward and
backward passes must do (per layer: the forward product, the weight gradient and, above the first
layer, the input gradient), timed with BLAS on float64 matrices of one mean-size batch's shapes
(median of ``--repeats``), scaled to the epoch's documents by the flops. The ratio is ours / floor;
the issue's target is 2x on CPU.

Memory: the peak traced allocation (tracemalloc) over what was allocated before (the fold's
arrays) of an epoch's batch evaluations (objective and gradient of every batch, as the solver
takes them), beside the fold's X and one mean batch's X: bounded by the batch, not the fold; and
of a whole one-epoch solve, which adds the start-point objective on the whole fold (the MLP
scores it in chunks of rows; the loss's padded (Q, L) arrays are fold-sized).

    PYTHONPATH=src python benchmarks/bench_neural.py [--queries 18900] [--max-docs 240] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from rankstudy.data.rankdata import RankData
from rankstudy.losses.registry import bind_loss
from rankstudy.scorers.mlp import MLPScorer
from rankstudy.solvers.adam import Adam, batch_rows
from rankstudy.solvers.objective import Objective


def make_fold(n_queries: int, max_docs: int, n_features: int, seed: int = 0) -> RankData:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, max_docs + 1, n_queries)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    X = np.empty((n, n_features), dtype=np.float32)
    for start in range(0, n, 1 << 18):  # in blocks: no float64 copy of the whole fold
        X[start:start + (1 << 18)] = rng.standard_normal((min(1 << 18, n - start), n_features), dtype=np.float32)
    w = np.random.default_rng(1).normal(size=n_features).astype(np.float32) / np.sqrt(n_features)
    utility = X @ w + 0.5 * rng.standard_normal(n, dtype=np.float32)
    y = np.digitize(utility, np.quantile(utility, [0.5, 0.8, 0.93, 0.98])).astype(np.float64)
    return RankData(X=X, y=y, qid=np.repeat(np.arange(n_queries), lengths), docid=np.arange(n), offsets=offsets)


def layer_products(rows: int, sizes: list[int]):
    """A callable doing the forward and backward GEMMs of one batch of ``rows`` documents, and their flops."""
    rng = np.random.default_rng(0)
    hs = [rng.normal(size=(rows, a)) for a in sizes[:-1]]
    Ws = [rng.normal(size=(a, b)) for a, b in zip(sizes[:-1], sizes[1:])]
    dzs = [rng.normal(size=(rows, b)) for b in sizes[1:]]
    flops = sum(2 * rows * a * b * (2 if k == 0 else 3) for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])))

    def run() -> None:
        for k, (h, W, dz) in enumerate(zip(hs, Ws, dzs)):
            h @ W  # forward
            h.T @ dz  # weight gradient
            if k:
                dz @ W.T  # gradient to the layer's input (not needed for the first layer)

    return run, flops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=18900)
    parser.add_argument("--max-docs", type=int, default=240)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--hidden", type=int, nargs="*", default=[64, 32])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--loss", default="listnet")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--blas-threads", type=int, default=1)
    args = parser.parse_args()

    began = time.perf_counter()
    fold = make_fold(args.queries, args.max_docs, args.features)
    n = len(fold.y)
    print(f"fold: {args.queries} queries, {n} documents x {args.features} features "
          f"({fold.X.nbytes / 2**20:.0f} MiB float32), built in {time.perf_counter() - began:.1f} s")
    with threadpool_limits(args.blas_threads):
        objective = Objective(MLPScorer(args.hidden).bind(fold), bind_loss(args.loss), fold, 0.0)
        theta0 = objective.initial(np.random.default_rng(0))
        adam = Adam(epochs=1, batch_size=args.batch_size, patience=None)
        solution = adam.solve(objective, theta0)
        ours = solution.history[1]["seconds"]

        per_batch_rows = int(round(n / args.queries * args.batch_size))
        run, flops = layer_products(per_batch_rows, [args.features, *args.hidden, 1])
        run()
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        gemm = float(np.median(times))
        floor = gemm * n / per_batch_rows

        # the epoch's own work: every batch's objective and gradient, as Adam.solve takes them
        rng = np.random.default_rng(1)
        order = rng.permutation(args.queries)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for b in range(0, args.queries, args.batch_size):
            rows, offsets = batch_rows(fold.offsets, order[b:b + args.batch_size], None, rng)
            objective.batch(rows, offsets)(solution.theta, rng=rng)
        peak_epoch = tracemalloc.get_traced_memory()[1] - before
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        Adam(epochs=1, batch_size=args.batch_size, patience=None, seed=1).solve(objective, solution.theta)
        peak_solve = tracemalloc.get_traced_memory()[1] - before
        tracemalloc.stop()

    batch_x = per_batch_rows * args.features * 8
    print(f"network {args.features} -> {' -> '.join(map(str, args.hidden))} -> 1, {args.loss}, batches of "
          f"{args.batch_size} queries (~{per_batch_rows} documents), BLAS threads {args.blas_threads}")
    print(f"GEMM throughput on a batch's shapes: {flops / gemm / 1e9:.2f} GFLOP/s")
    print(f"{'':24}{'seconds':>10}")
    print(f"{'one epoch (ours)':24}{ours:10.2f}")
    print(f"{'floor (GEMMs alone)':24}{floor:10.2f}")
    print(f"ratio ours / floor: {ours / floor:.2f} (target 2)")
    print(f"peak traced memory over the fold's arrays: an epoch's batches {peak_epoch / 2**20:.1f} MiB; a whole "
          f"one-epoch solve (with the start objective on the whole fold, scored in chunks) {peak_solve / 2**20:.1f} MiB")
    print(f"beside: the fold's X {fold.X.nbytes / 2**20:.0f} MiB (float32), one mean batch's X "
          f"{batch_x / 2**20:.1f} MiB (float64)")
    print(f"train loss: start {solution.history[0]['train_loss']:.4f}, after the epoch (mean over its batches) "
          f"{solution.history[1]['train_loss']:.4f}")


if __name__ == "__main__":
    main()
