"""The CDN loss of one query: seconds of one evaluation (value and gradients), measured side by side
in one run.

1. The fully connected CDN on OHSUMED's mean-length training query (146 documents, 3 grades
   drawn 120/24/2 as fold 1's query 39: 3,168 edges, 10.0 million cliques): the compiled kernel
   (:mod:`rankstudy.losses.cdn_numba`, 1 and ``--threads`` threads) and the numpy form (the
   reference, blocks of rows), beside the floor: one ``np.log1p`` per clique over an E x E array
   (written into a preallocated output, single-threaded as numpy is). The best of ``--repeats``.
2. Against the number of documents (``--grades`` label levels, drawn uniformly): the full CDN
   (kernel; numpy form up to ``--numpy-cliques`` cliques), random topologies (degree 2, one and
   three averaged), the disconnected one, and RankNet on the same scores (the O(E) pairwise
   floor), with the peak traced memory of each.

    python benchmarks/bench_cdn.py [--threads 2] [--repeats 5] [--docs 20 50 100 150 300] [--grades 5]
"""

from __future__ import annotations

import argparse
import tracemalloc

import numpy as np

from rankstudy.data.blocks import pad
from rankstudy.losses.baseline import ranknet
from rankstudy.losses.cdn import _query_loss, cdn, order_edges
from rankstudy.losses.cdn_numba import full_cdn_query
from rankstudy.losses.padded import PAIR_BLOCK_ELEMENTS
from rankstudy.util.threads import use_job_threads
from timing import best_of

OHSUMED_MEAN_QUERY = (120, 24, 2)  # documents per grade 0/1/2 of fold 1's training query 39


def peak_memory(fn) -> int:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def mean_query(threads: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    y = np.repeat([0.0, 1.0, 2.0], OHSUMED_MEAN_QUERY)
    s = 0.3 * rng.normal(size=len(y)) + 0.2 * y  # margins of either sign, as in training
    heads, tails = order_edges(y)
    r = s[heads] - s[tails]
    E = len(r)
    cliques = E * (E - 1)
    floor_in = rng.random((E, E)) * 3.0  # 1 + a + b - 1 lies in (0, inf); the log's cost does not depend on it
    floor_out = np.empty_like(floor_in)
    w1, w2 = 0.8, 1.3
    rows = {
        "floor: np.log1p over E x E": lambda: np.log1p(floor_in, out=floor_out),
        "kernel, 1 thread": lambda: full_cdn_query(r, w1, w2, threads=1),
        f"kernel, {threads} threads": lambda: full_cdn_query(r, w1, w2, threads=threads),
        "numpy form (reference)": lambda: _query_loss(r, "full", w1, w2, 1, 1, None, PAIR_BLOCK_ELEMENTS, "numpy"),
    }
    seconds = {name: best_of(fn, repeats if "numpy" not in name else max(1, repeats // 2), warmup=True)
               for name, fn in rows.items()}
    floor = seconds["floor: np.log1p over E x E"]
    numpy_form = seconds["numpy form (reference)"]
    print(f"Full CDN, one query of {len(y)} documents (grades {'/'.join(map(str, OHSUMED_MEAN_QUERY))}), "
          f"{E} edges, {cliques / 1e6:.1f} million cliques; best of {repeats}")
    print(f"{'':30s} {'seconds':>9s} {'ns/clique':>10s} {'x floor':>8s} {'x numpy form':>13s}")
    for name, sec in seconds.items():
        print(f"{name:30s} {sec:9.4f} {sec / cliques * 1e9:10.2f} {sec / floor:8.2f} {sec / numpy_form:13.4f}")


def sweep(docs: list[int], grades: int, numpy_cliques: float) -> None:
    rng = np.random.default_rng(0)
    variants = {
        "ranknet (floor)": lambda s, y, m: ranknet(s, y, m),
        "cdn disconnected": lambda s, y, m: cdn(s, y, m, topology="disconnected"),
        "cdn random d=2": lambda s, y, m: cdn(s, y, m, topology="random", degree=2),
        "cdn random d=2 x3": lambda s, y, m: cdn(s, y, m, topology="random", degree=2, n_topologies=3),
        "cdn full (kernel)": lambda s, y, m: cdn(s, y, m, topology="full"),
        "cdn full (numpy)": lambda s, y, m: cdn(s, y, m, topology="full", backend="numpy"),
    }
    print(f"\nOne query against its length ({grades} grades drawn uniformly): seconds and peak traced memory")
    print(f"{'docs':>6s} {'edges':>7s} {'cliques (full)':>15s}  " + "  ".join(f"{v:>22s}" for v in variants))
    for n in docs:
        offsets = np.array([0, n])
        s, mask = pad(rng.normal(size=n), offsets)
        y, _ = pad(rng.integers(0, grades, n).astype(float), offsets)
        edges = len(order_edges(y[0])[0])
        cells = []
        for name, fn in variants.items():
            if name == "cdn full (numpy)" and edges * (edges - 1) > numpy_cliques:
                cells.append("-")
                continue
            seconds = best_of(lambda: fn(s, y, mask), 1, warmup=True)
            cells.append(f"{seconds:9.4f} s {peak_memory(lambda: fn(s, y, mask)) / 2**20:7.1f} MiB")
        print(f"{n:6d} {edges:7d} {edges * (edges - 1):15d}  " + "  ".join(f"{c:>22s}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="threads of the kernel (the job's, in the pipeline)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--docs", type=int, nargs="+", default=[20, 50, 100, 150, 300])
    parser.add_argument("--grades", type=int, default=5)
    parser.add_argument("--numpy-cliques", type=float, default=1e8, help="skip the numpy form above this")
    args = parser.parse_args()
    use_job_threads(args.threads)
    mean_query(args.threads, args.repeats)
    sweep(args.docs, args.grades, args.numpy_cliques)


if __name__ == "__main__":
    main()
