"""RankBoost's round against its floor: one pass of the per-round work (the pair potentials pi
from the scores, every feature's histogram of pi over its codes and the r of every candidate, the
pick and the score update) beside d plain weighted ``np.bincount`` calls over the same codes (the
histograms alone, nothing else), and beside the round as commit 8fda413 did it (a weight per
crucial pair, pi by two bincounts over the pairs, r by cumulative sums of pi in every feature's
sorted order, the pairs' update), all in the same run, on a synthetic MSLR-WEB30K-shaped
training split at 1/k of a fold (``bench_board_cost.py``'s data, cached in its workdir).

    python benchmarks/bench_rankboost.py [--k 16] [--max-thresholds 256] [--repeats 5]
        [--no-before] [--workdir DIR]

Times are the best of ``--repeats``, the parts interleaved (one thread). Memory: the bytes of the arrays a fit keeps
(codes and potentials' index arrays now; pairs, sorted order and per-round temporaries before).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_board_cost import data_dir, prepare
from timing import best_of

from rankstudy.data.rankdata import RankData
from rankstudy.rankers.pair_potentials import CrucialPairs
from rankstudy.rankers.threshold_bins import all_r, bin_features
from rankstudy.util.threads import use_job_threads


def before_round(X_order, k, f, hi, lo, D, n):
    """Commit 8fda413's round: pi over the pairs, r in sorted order, the pairs' update."""
    pi = np.bincount(hi, D, n) - np.bincount(lo, D, n)
    r_all = np.cumsum(pi[X_order], axis=0)[k, f]
    best = int(np.argmax(np.abs(r_all)))
    h = np.zeros(n)  # the update's arithmetic; which documents pass does not change its cost
    D = D * np.exp(0.1 * (h[lo] - h[hi]))
    return D / D.sum(), best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=16, help="1/k of an MSLR-WEB30K fold")
    parser.add_argument("--max-thresholds", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-before", action="store_true", help="skip the 8fda413 round (its memory: O(n d + pairs))")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "board-cost")
    args = parser.parse_args()
    use_job_threads(1)

    prepare(args.workdir, "mslr30k", args.k)
    train = RankData.from_npz(data_dir(args.workdir, "mslr30k", args.k) / "train.npz")
    X, y, offsets = np.array(train.X), train.y, train.offsets
    n, d = X.shape
    print(f"MSLR-WEB30K-shaped fold at 1/{args.k}: {n:,} training documents, {train.n_queries:,} queries, "
          f"{d} features; max_thresholds {args.max_thresholds}")

    start = time.process_time()
    bins = bin_features(X, args.max_thresholds)
    pairs = CrucialPairs(y, offsets)
    setup = time.process_time() - start
    kept = bins.codes.nbytes + sum(a.nbytes for a in vars(pairs).values() if isinstance(a, np.ndarray))
    print(f"setup (bins and pair groups, once a fit): {setup:.2f} CPU-s; codes {bins.codes.dtype} "
          f"{bins.codes.nbytes / 2**20:.0f} MB, pair potentials' arrays "
          f"{(kept - bins.codes.nbytes) / 2**20:.1f} MB, {len(bins.theta):,} candidates")

    rng = np.random.default_rng(0)
    scores = rng.normal(size=n)  # as after some rounds: a non-uniform distribution
    pi, _ = pairs.potential(scores)
    sizes = np.diff(bins.starts)

    def potentials():
        return pairs.potential(scores)

    def search():
        return int(np.argmax(np.abs(all_r(pi, bins))))

    def update():
        return scores + 0.1 * bins.h(0)

    def round_():
        p, _ = pairs.potential(scores)
        best = int(np.argmax(np.abs(all_r(p, bins))))
        return scores + 0.1 * bins.h(best)

    def floor():
        for f in range(d):
            np.bincount(bins.codes[f], weights=pi, minlength=sizes[f] + 1)

    def plain():
        for f in range(d):
            np.bincount(bins.codes[f], minlength=sizes[f] + 1)

    # interleaved, so the floor and the round see the same neighbours on a shared machine
    parts = {"floor": floor, "plain": plain, "round": round_, "potentials": potentials, "search": search,
             "update": update}
    t = {name: np.inf for name in parts}
    for _ in range(args.repeats):
        for name, fn in parts.items():
            t[name] = min(t[name], best_of(fn, 1, warmup=t[name] == np.inf))
    print(f"floor: {d} weighted np.bincount over the codes {t['floor'] * 1e3:.0f} ms "
          f"(unweighted {t['plain'] * 1e3:.0f} ms)")
    print(f"round: {t['round'] * 1e3:.0f} ms = {t['round'] / t['floor']:.2f}x the floor "
          f"({t['round'] / t['plain']:.2f}x the unweighted); parts: potentials {t['potentials'] * 1e3:.0f} ms, "
          f"search {t['search'] * 1e3:.0f} ms ({t['search'] / t['floor']:.2f}x the floor), "
          f"update {t['update'] * 1e3:.1f} ms")

    if args.no_before:
        return
    start = time.process_time()
    order = np.argsort(-X, axis=0, kind="stable")
    his, los, weights = [], [], []
    for a, b in zip(offsets[:-1], offsets[1:]):  # the old crucial_pairs, one query at a time
        hi, lo = np.nonzero(y[a:b, None] > y[None, a:b])
        if len(hi):
            his.append(hi + a)
            los.append(lo + a)
            weights.append(np.full(len(hi), 1.0 / len(hi)))
    hi, lo, D = np.concatenate(his), np.concatenate(los), np.concatenate(weights)
    D /= D.sum()
    # as many candidates as now, at random sorted positions: reading r there costs the same
    k, f = rng.integers(0, n - 1, len(bins.theta)), bins.feature
    old_setup = time.process_time() - start
    old_kept = order.nbytes + hi.nbytes + lo.nbytes + D.nbytes
    old = best_of(lambda: before_round(order, k, f, hi, lo, D, n), args.repeats, warmup=True)
    print(f"before (8fda413): setup {old_setup:.2f} CPU-s (argsort and pairs), {len(hi):,} pairs, kept "
          f"{old_kept / 2**20:.0f} MB (order n x d int64 and 24 bytes a pair, plus 2 n x d float64 "
          f"a round); round {old * 1e3:.0f} ms = {old / t['round']:.1f}x the round now")


if __name__ == "__main__":
    main()
