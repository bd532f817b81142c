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

The floor is measured before and after the epoch and both are printed (the machine is shared);
the ratio uses the faster of the two (a floor is what the products take undisturbed: a mean lets
a slowed measurement lower the bar, and under load the epoch once came out at 0.94x it). Wall and CPU seconds are both reported: with BLAS on one thread the CPU
seconds are less disturbed by other processes (the epoch's CPU seconds are the one-epoch solve's
less one full-fold objective evaluation, the start point's).

Memory: the peak traced allocation (tracemalloc) over what was allocated before (the fold's
arrays) of an epoch's batch evaluations (objective and gradient of every batch, as the solver
takes them), beside the fold's X and one mean batch's X: bounded by the batch, not the fold.

The last line names the device: JAX's backend and devices when the scorer or the loss runs on
JAX (a GPU there when JAX has one), else the CPU.

``--scorer attention`` times an epoch of the context-aware scorer instead (no floor; its seconds
include JAX's compilation for each padded batch shape met; tracemalloc does not see XLA's
buffers, so its memory figure covers the numpy side only).

    PYTHONPATH=src python benchmarks/bench_neural.py [--queries 18900] [--max-docs 240] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from rankstudy.data.rankdata import RankData
from rankstudy.losses.registry import bind_loss
from rankstudy.scorers.attention import AttentionScorer
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


def product_seconds(run, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``run`` (after one warm-up call)."""
    run()
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return float(np.median(wall)), float(np.median(cpu))


def floor_of(timings: list[float]) -> float:
    """The floor from its timings before and after the epoch: the fastest, the one least
    disturbed by the shared machine (a mean of a disturbed and an undisturbed timing is no floor)."""
    return min(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=18900)
    parser.add_argument("--max-docs", type=int, default=240)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--hidden", type=int, nargs="*", default=[64, 32])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--loss", default="listnet")
    parser.add_argument("--scorer", choices=("mlp", "attention"), default="mlp",
                        help="attention: allRank's context-aware scorer with its defaults (JAX); no floor")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--blas-threads", type=int, default=1)
    args = parser.parse_args()

    began = time.perf_counter()
    fold = make_fold(args.queries, args.max_docs, args.features)
    n = len(fold.y)
    print(f"fold: {args.queries} queries, {n} documents x {args.features} features "
          f"({fold.X.nbytes / 2**20:.0f} MiB float32), built in {time.perf_counter() - began:.1f} s")
    with threadpool_limits(args.blas_threads):
        scorer = MLPScorer(args.hidden) if args.scorer == "mlp" else AttentionScorer()
        objective = Objective(scorer.bind(fold), bind_loss(args.loss), fold, 0.0)
        theta0 = objective.initial(np.random.default_rng(0))
        per_batch_rows = int(round(n / args.queries * args.batch_size))
        if args.scorer == "mlp":
            run, flops = layer_products(per_batch_rows, [args.features, *args.hidden, 1])
            gemm = [product_seconds(run, args.repeats)]  # before the epoch, and after it below
        adam = Adam(epochs=1, batch_size=args.batch_size, patience=None)
        cpu = time.process_time()
        solution = adam.solve(objective, theta0)
        cpu = time.process_time() - cpu
        ours = solution.history[1]["seconds"]
        # the solve's CPU time less its start-point objective's (a full-fold evaluation) and the
        # final one's: the epoch's CPU seconds, less disturbed by neighbours than wall seconds
        start_cpu = time.process_time()
        objective(theta0, need_grad=False)
        ours_cpu = cpu - (time.process_time() - start_cpu)
        if args.scorer == "mlp":
            gemm.append(product_seconds(run, args.repeats))

        # the epoch's own work: every batch's objective and gradient, as Adam.solve takes them
        rng = np.random.default_rng(1)
        order = rng.permutation(args.queries)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for b in range(0, args.queries, args.batch_size):
            rows, offsets = batch_rows(fold.offsets, order[b:b + args.batch_size], None, rng)
            objective.batch(rows, offsets)(solution.theta, rng=rng)
        peak_epoch = tracemalloc.get_traced_memory()[1] - before
        tracemalloc.stop()

    batch_x = per_batch_rows * args.features * 8
    network = (f"MLP {args.features} -> {' -> '.join(map(str, args.hidden))} -> 1" if args.scorer == "mlp"
               else "attention (d_model 64, 2 blocks, 1 head, d_ff 128)")
    print(f"{network}, {args.loss}, batches of "
          f"{args.batch_size} queries (~{per_batch_rows} documents), BLAS threads {args.blas_threads}")
    print(f"{'':34}{'wall s':>10}{'CPU s':>10}")
    print(f"{'one epoch (ours)':34}{ours:10.2f}{ours_cpu:10.2f}")
    if args.scorer == "mlp":
        for when, (wall, cpu_s) in zip(("before", "after"), gemm):
            print(f"{'floor, GEMMs alone (' + when + ')':34}{wall * n / per_batch_rows:10.2f}"
                  f"{cpu_s * n / per_batch_rows:10.2f}   ({flops / wall / 1e9:.2f} GFLOP/s wall)")
        wall_floor, cpu_floor = (floor_of([g[i] for g in gemm]) * n / per_batch_rows for i in (0, 1))
        print(f"ratio ours / floor (the faster of before and after): wall {ours / wall_floor:.2f}, CPU "
              f"{ours_cpu / cpu_floor:.2f} (target 2)")
    else:
        print("(no floor computed for the attention scorer)")
    print(f"peak traced memory over the fold's arrays during an epoch's batches: {peak_epoch / 2**20:.1f} MiB")
    print(f"beside: the fold's X {fold.X.nbytes / 2**20:.0f} MiB (float32), one mean batch's X "
          f"{batch_x / 2**20:.1f} MiB (float64)")
    print(f"train loss: start {solution.history[0]['train_loss']:.4f}, after the epoch (mean over its batches) "
          f"{solution.history[1]['train_loss']:.4f}")
    print(device_line())


def device_line() -> str:
    """Where the epoch ran: JAX's backend and devices when the scorer or the loss used JAX (a GPU
    when JAX has one, e.g. with jax[cuda12]), else numpy on the CPU."""
    if "jax" not in sys.modules:
        return "device: CPU (numpy; neither the scorer nor the loss uses JAX)"
    import jax
    return (f"device: JAX backend {jax.default_backend()} ({', '.join(map(str, jax.devices()))}) for the JAX "
            "parts; the numpy parts on the CPU")


if __name__ == "__main__":
    main()
