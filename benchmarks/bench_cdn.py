"""The CDN loss of one query against its number of order-graph edges E: seconds and peak traced
memory of one evaluation (value and gradients) of the full topology (E (E - 1) cliques,
evaluated in bounded blocks), of random topologies (degree 2, one and three averaged) and of
the disconnected one, beside RankNet on the same scores (the O(E) pairwise floor, same run).

    python benchmarks/bench_cdn.py [--docs 20 50 100 150 300] [--grades 5]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from rankstudy.data.blocks import pad
from rankstudy.losses.baseline import ranknet
from rankstudy.losses.cdn import cdn, order_edges


def measure(fn):
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[20, 50, 100, 150, 300])
    parser.add_argument("--grades", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    variants = {
        "ranknet (floor)": lambda s, y, m: ranknet(s, y, m),
        "cdn disconnected": lambda s, y, m: cdn(s, y, m, topology="disconnected"),
        "cdn random d=2": lambda s, y, m: cdn(s, y, m, topology="random", degree=2),
        "cdn random d=2 x3": lambda s, y, m: cdn(s, y, m, topology="random", degree=2, n_topologies=3),
        "cdn full": lambda s, y, m: cdn(s, y, m, topology="full"),
    }
    print(f"{'docs':>6s} {'edges':>7s} {'cliques (full)':>15s}  " + "  ".join(f"{v:>22s}" for v in variants))
    for n in args.docs:
        offsets = np.array([0, n])
        s, mask = pad(rng.normal(size=n), offsets)
        y, _ = pad(rng.integers(0, args.grades, n).astype(float), offsets)
        edges = len(order_edges(y[0])[0])
        cells = []
        for fn in variants.values():
            seconds, peak = measure(lambda: fn(s, y, mask))
            cells.append(f"{seconds:9.4f} s {peak / 2**20:7.1f} MiB")
        print(f"{n:6d} {edges:7d} {edges * (edges - 1):15d}  " + "  ".join(f"{c:>22s}" for c in cells))


if __name__ == "__main__":
    main()
