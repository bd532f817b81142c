"""Benchmark: chunked moment accumulation vs materialise-then-correlate for pair rho.

Scores the Pearson correlation with the label of every second-order feature
x_i * x_j (i <= j) -- m(m+1)/2 = 9,316 products at m = 136 (MSLR-WEB30K width) --
two ways, in the same process, on the same data:

* ``pair_correlations`` (rankstudy.features.pairs): a few m x m matrix products
  accumulated over row chunks; never builds a product column.
* brute force: build the product columns (in blocks of ``--pair-block`` pairs,
  because all of them at once would need n * m(m+1)/2 * 8 bytes, ~7.5 GB at
  n = 100k), centre them and correlate each with the centred label.

Both run with BLAS limited to ``--threads`` threads (default 1, via threadpoolctl):
on a shared 2-core machine multi-threaded OpenBLAS slowed the fast method ~10x
under oversubscription, which would measure the neighbours rather than the method.

Prints wall-clock and process CPU seconds, speed-up ratios, max |rho difference| and peak
traced memory (tracemalloc, which sees numpy's allocations) of each.

    PYTHONPATH=src python benchmarks/bench_rho.py [--n 100000 --m 136] [--continuous-y]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from rankstudy.features.pairs import pair_correlations


def letor_like(n: int, m: int, seed: int, graded: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Skewed non-negative, Gaussian, discrete and constant columns; labels 0..4 (or continuous)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m))
    X[:, 0::4] = np.exp(X[:, 0::4])              # count-like, skewed
    X[:, 1::4] = np.floor(np.abs(X[:, 1::4]) * 3)  # discrete with ties
    X[:, 2::17] = 0.0                            # all-zero
    X[:, 3::29] = 100.0 + X[:, 3::29] * 0.01     # large offset, small spread
    score = X[:, 4] + X[:, 5] * X[:, 6] + rng.standard_normal(n)
    if not graded:
        return X, score
    y = np.searchsorted(np.quantile(score, [0.5, 0.78, 0.92, 0.98]), score).astype(np.float64)
    return X, y


def brute_force(X: np.ndarray, y: np.ndarray, pair_block: int) -> np.ndarray:
    ii, jj = np.triu_indices(X.shape[1])
    yc = y - y.mean()
    syy = yc @ yc
    rho = np.zeros(len(ii))
    for s in range(0, len(ii), pair_block):
        P = X[:, ii[s:s + pair_block]] * X[:, jj[s:s + pair_block]]
        P -= P.mean(axis=0)
        spp = np.einsum("ij,ij->j", P, P)
        cov = yc @ P
        ok = spp > 0
        rho[s:s + pair_block][ok] = cov[ok] / np.sqrt(spp[ok] * syy)
    return rho


def timed(fn, *args):
    """(result, wall seconds, CPU seconds of this process)."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - w0, time.process_time() - c0


def measure(fn, *args, repeat: int = 1):
    """Best wall and CPU time over ``repeat`` runs, and tracemalloc peak of the first."""
    tracemalloc.start()
    out, wall, cpu = timed(fn, *args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    for _ in range(repeat - 1):
        _, w, c = timed(fn, *args)
        wall, cpu = min(wall, w), min(cpu, c)
    return out, wall, cpu, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--m", type=int, default=136)
    ap.add_argument("--chunk-rows", type=int, default=8192)
    ap.add_argument("--pair-block", type=int, default=32,
                    help="products built per block by the brute force (32 was its fastest of 32-1024)")
    ap.add_argument("--repeat", type=int, default=3, help="timing repeats of the fast method (best is reported)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--continuous-y", action="store_true",
                    help="real-valued labels (general path) instead of LETOR grades 0..4")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads for both methods")
    a = ap.parse_args()
    with threadpool_limits(limits=a.threads, user_api="blas"):
        run(a)


def run(a: argparse.Namespace) -> None:
    X, y = letor_like(a.n, a.m, a.seed, graded=not a.continuous_y)
    n_pairs = a.m * (a.m + 1) // 2
    print(f"n={a.n} m={a.m} pairs={n_pairs} blas_threads={a.threads} labels={'continuous' if a.continuous_y else 'graded 0-4'} X={X.nbytes / 2**20:.0f} MiB; "
          f"all products at once would be {a.n * n_pairs * 8 / 2**30:.1f} GiB")

    fast_df, fast_wall, fast_cpu, fast_peak = measure(pair_correlations, X, y, a.chunk_rows, repeat=a.repeat)
    brute, brute_wall, brute_cpu, brute_peak = measure(brute_force, X, y, a.pair_block)

    diff = np.abs(fast_df["rho"].to_numpy() - brute)
    print(f"{'':18s}   wall s    CPU s   peak MiB")
    print(f"pair_correlations : {fast_wall:8.3f} {fast_cpu:8.3f} {fast_peak / 2**20:10.1f}"
          f"   (chunk_rows={a.chunk_rows}, best of {a.repeat})")
    print(f"materialise+corr  : {brute_wall:8.3f} {brute_cpu:8.3f} {brute_peak / 2**20:10.1f}   (pair_block={a.pair_block})")
    print(f"speed-up          : {brute_wall / fast_wall:8.1f}x wall, {brute_cpu / fast_cpu:.1f}x CPU"
          f"  (CPU time is the robust figure on a shared machine)")
    print(f"max |rho diff|    : {diff.max():.3e}   (max |rho| = {np.abs(brute).max():.3f})")


if __name__ == "__main__":
    main()
