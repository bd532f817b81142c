"""Benchmark: rankstudy.evaluation.metrics.per_query against ranx on about 1M scored documents.

Synthetic data shaped like MSLR-WEB30K: query lengths are log-normal (median
about 90, mean about 120, clipped to 1..1251), labels 0..4 with MSLR-like
frequencies, and continuous scores that correlate with the labels, so there are
no ties and the metrics are not trivial.

Both libraries compute NDCG@10 (gain 2^r - 1), MAP, MRR and P@10 per query, in
the same process:

* ours: ``per_query(scores, labels, offsets, ["ndcg@10", "map", "mrr", "p@10"])``
  on the flat arrays.
* ranx: ``evaluate(qrels, run, ["ndcg_burges@10", "map", "mrr", "precision@10"])``.
  Its time INCLUDES building its inputs from the same flat arrays: the
  {qid: {docid: value}} dicts, then ranx.Qrels / ranx.Run. ranx compiles its
  kernels (including the Qrels/Run builders) with numba, so the JIT is warmed up
  once on the first few queries, with the same id formats, before timing.

Each side runs --repeats times (ours first, then ranx) and the best time of each
is compared, because the machine may be shared with other work. Every run of
ours starts from the flat arrays, so padding and sorting are included.

Then the script asserts that the per-query values agree to 1e-9 and prints the
speed-up (target: ours >= 10x faster than ranx, construction included).

Run:  PYTHONPATH=src python benchmarks/bench_metrics.py [--docs 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

from rankstudy.evaluation.metrics import per_query

OURS = ["ndcg@10", "map", "mrr", "p@10"]
RANX_NAME = {"ndcg@10": "ndcg_burges@10", "map": "map", "mrr": "mrr", "p@10": "precision@10"}


def synthetic_queries(n_docs: int, seed: int):
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.round(rng.lognormal(mean=4.5, sigma=0.8, size=n_docs // 50 + 10)), 1, 1251).astype(np.int64)
    lengths = lengths[: np.searchsorted(np.cumsum(lengths), n_docs) + 1]
    lengths[-1] -= lengths.sum() - n_docs  # total exactly n_docs
    lengths = lengths[lengths > 0]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    labels = rng.choice(5, size=n_docs, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
    scores = 0.5 * labels + rng.normal(size=n_docs)
    return scores, labels, offsets


def ranx_inputs(scores, labels, offsets):
    """The {qid: {docid: value}} dicts ranx takes, from our flat arrays."""
    qrels, run = {}, {}
    score_list, label_list = scores.tolist(), labels.astype(np.int64).tolist()
    # Fixed-width ids: numba specialises ranx's kernels on the string width, so this
    # lets a warm-up on a few queries compile exactly what the timed run uses.
    docids = [f"d{j:05d}" for j in range(int(np.diff(offsets).max()))]
    for q, (start, stop) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist())):
        qid = f"q{q:07d}"  # zero-padded so ranx's sorted query order is ours
        ids = docids[: stop - start]
        qrels[qid] = dict(zip(ids, label_list[start:stop]))
        run[qid] = dict(zip(ids, score_list[start:stop]))
    return qrels, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from importlib.metadata import version

    import numba
    from ranx import Qrels, Run, evaluate

    scores, labels, offsets = synthetic_queries(args.docs, args.seed)
    lengths = np.diff(offsets)
    print(f"data: {len(scores):,} documents, {len(lengths):,} queries, length median {np.median(lengths):.0f} "
          f"mean {lengths.mean():.1f} max {lengths.max()}; padded (Q, L) = ({len(lengths)}, {lengths.max()})")
    print(f"machine: {os.cpu_count()} cores, numba threads {numba.get_num_threads()}; "
          f"numpy {np.__version__}, ranx {version('ranx')}")

    # Ours first, before ranx's numba machinery starts, then ranx; best of each.
    ours_times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        ours = per_query(scores, labels, offsets, OURS)
        ours_times.append(time.perf_counter() - t0)

    ranx_metrics = [RANX_NAME[m] for m in OURS]
    ranx_times = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety warnings from inside ranx
        t0 = time.perf_counter()
        warm_qrels, warm_run = ranx_inputs(scores, labels, offsets[:4])  # the first 3 queries
        evaluate(Qrels(warm_qrels), Run(warm_run), ranx_metrics)
        print(f"ranx  JIT warm-up on the first 3 queries, not timed below: {time.perf_counter() - t0:.2f} s "
              "(includes numba compiling, or loading its on-disk cache)")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            qrels_dict, run_dict = ranx_inputs(scores, labels, offsets)
            t1 = time.perf_counter()
            qrels, run = Qrels(qrels_dict), Run(run_dict)
            t2 = time.perf_counter()
            ranx_values = evaluate(qrels, run, ranx_metrics, return_mean=False)
            t3 = time.perf_counter()
            ranx_times.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))
            del qrels_dict, run_dict, qrels, run

    ours_time = min(ours_times)
    dicts, build, ranx_eval, ranx_time = min(ranx_times, key=lambda parts: parts[-1])
    print(f"ours  per_query {OURS}: best {ours_time:.3f} s of {args.repeats} "
          f"(all: {', '.join(f'{x:.3f}' for x in ours_times)})")
    print(f"ranx  best of {args.repeats}: dicts from arrays {dicts:.3f} s + Qrels/Run {build:.3f} s "
          f"+ evaluate {ranx_eval:.3f} s = {ranx_time:.3f} s (all: {', '.join(f'{x[-1]:.3f}' for x in ranx_times)})")

    # --- agreement ---
    for name in OURS:
        np.testing.assert_allclose(ours[name], ranx_values[RANX_NAME[name]], rtol=0, atol=1e-9, err_msg=name)
    means = ", ".join(f"{name} {ours[name].mean():.4f}" for name in OURS)
    print(f"values agree with ranx to 1e-9 on all {len(lengths):,} queries (means: {means})")

    speedup = ranx_time / ours_time
    print(f"speed-up (best vs best): ours is {speedup:.1f}x faster than ranx incl. construction "
          f"({ranx_eval / ours_time:.1f}x vs ranx evaluate alone); target >= 10x: "
          f"{'met' if speedup >= 10 else 'NOT met'}")


if __name__ == "__main__":
    main()
