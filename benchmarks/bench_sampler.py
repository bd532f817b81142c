"""The swap sampler of Dubey et al. (2009) (``rankstudy.losses.swap_sampler``): states emitted
per second by the plain-Python reference, the vectorised numpy walks and the compiled numba
walks, with the speed-ups measured in the same run; how the time grows with the sample size
and with the walk length; and the whole per-split sample (``conditional.draw_sample``).

The queries are synthetic with LETOR-like shapes: ``--queries`` queries (default 200), n+
uniform in 1..15 goods and n- uniform in 5..100 bads (seeded). Each backend draws
``settings.n_walks`` walks of ``walk_length`` accepted swaps per query, i.e. n_walks (T + 1)
states per query. All times are medians of ``--repeats`` calls after a warm-up call.

1. States per second of each implementation at the default settings (sample_size 100,
   walk_length 10), and the ratios numpy / python, numba / python and numba / numpy. The
   Python reference is slow, so it is timed on a seeded random subset of
   ``--python-queries`` queries and its time scaled to all queries (its rate is per state, so
   it needs no scaling); its states are checked identical to the numpy walks, and the numba
   walks to the numpy ones. The numba kernel compiles on its first call: that call is timed
   separately (in a fresh numba cache directory, so it is a real compilation), and a second
   process then times its own first call with that on-disk cache filled (cache=True should
   make it a load, not a compile).
2. Linearity: seconds per query and per emitted state against sample_size (fixed
   walk_length) and against walk_length (fixed number of walks, sample_size = n_walks (T+1)),
   for numpy and numba, with the slope of log(time) against log(parameter) fitted over each
   sweep (1 = linear).
3. ``draw_sample`` (walks, deduplication, y*, coefficients) on the same queries at the
   default settings with each backend, beside the walks alone.

    python benchmarks/bench_sampler.py [--queries 200] [--repeats 3] [--python-queries 50] [--csv PATH]
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from rankstudy.data.blocks import pad
from rankstudy.losses.conditional import draw_sample
from rankstudy.losses.swap_sampler import SamplerSettings, draw_walks, numba_available, reference_walk
from timing import median_of

BACKENDS = ("numpy", "numba")

# run in a second process: the first numba call when the on-disk cache is already filled
FIRST_CALL_PROBE = """
import time
import numpy as np
from rankstudy.losses.swap_sampler import SamplerSettings, draw_walks
start = time.perf_counter()
draw_walks(np.array([3]), np.array([10]), np.array([0]), SamplerSettings(), backend="numba")
print(time.perf_counter() - start)
"""


def make_queries(n_queries: int, seed: int):
    """(n+, n-, padded labels, mask) of LETOR-like queries: goods labelled 1-2, bads 0,
    shuffled within each query."""
    rng = np.random.default_rng(seed)
    n_good = rng.integers(1, 16, n_queries)
    n_bad = rng.integers(5, 101, n_queries)
    values = []
    for P, N in zip(n_good, n_bad):
        labels = np.concatenate([rng.integers(1, 3, P), np.zeros(N, dtype=np.int64)]).astype(float)
        values.append(rng.permutation(labels))
    offsets = np.concatenate([[0], np.cumsum(n_good + n_bad)])
    labels, mask = pad(np.concatenate(values), offsets)
    return n_good, n_bad, labels, mask


def python_walks(n_good, n_bad, rows, settings):
    return [(int(q), w, reference_walk(int(n_good[q]), int(n_bad[q]), settings, int(q), w))
            for q in rows for w in range(settings.n_walks)]


def check_reference(states, walks, n_good, n_bad) -> None:
    """The reference's states equal the vectorised walks' (the benchmark times the same work)."""
    first = {}
    for i, q in enumerate(walks.query):
        first.setdefault(int(q), i)
    for q, w, walk in states:
        i = first[q] + w
        for t, (beats, beaten) in enumerate(walk):
            if (tuple(walks.beats[i, t, :n_good[q]]) != beats
                    or tuple(walks.beaten[i, t, :n_bad[q]]) != beaten):
                raise AssertionError(f"reference and numpy walks differ: query {q}, walk {w}, state {t}")


def first_call_in_new_process() -> float:
    """Seconds of the first numba call of a new process sharing this one's numba cache directory."""
    out = subprocess.run([sys.executable, "-c", FIRST_CALL_PROBE], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def loglog_slope(x, y) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def throughput(args, n_good, n_bad, rows, settings, backends, record):
    """Part 1; returns the median walk seconds of each backend (for part 3)."""
    Q = len(rows)
    per_query = settings.n_walks * (settings.walk_length + 1)
    print(f"1. states per second, sample_size {settings.sample_size}, walk_length {settings.walk_length} "
          f"({settings.n_walks} walks, {per_query} states per query), {Q} queries, median of {args.repeats}")
    subset = np.sort(np.random.default_rng(args.seed + 1).choice(Q, min(args.python_queries, Q), replace=False))
    py_seconds = median_of(lambda: python_walks(n_good, n_bad, subset, settings), args.repeats, warmup=False)
    py_states = len(subset) * per_query
    rates = {"python": py_states / py_seconds}
    seconds = {"python": py_seconds * Q / len(subset)}
    record("throughput", "python", settings, len(subset), py_states, py_seconds)

    first_call = {}
    walks = {}
    for backend in backends:
        start = time.perf_counter()
        walks[backend] = draw_walks(n_good, n_bad, rows, settings, backend=backend)
        first_call[backend] = time.perf_counter() - start
        seconds[backend] = median_of(lambda: draw_walks(n_good, n_bad, rows, settings, backend=backend),
                                          args.repeats, warmup=False)
        rates[backend] = Q * per_query / seconds[backend]
        record("throughput", backend, settings, Q, Q * per_query, seconds[backend])
    check_reference(python_walks(n_good, n_bad, subset, settings), walks["numpy"], n_good, n_bad)
    checked = "python reference == numpy on the subset"
    if "numba" in walks:
        for a, b in zip(walks["numpy"], walks["numba"]):
            np.testing.assert_array_equal(a, b)
        checked += ", numba == numpy on all queries"

    print(f"{'implementation':>16s} {'s (all queries)':>16s} {'ms / query':>11s} {'states / s':>12s} {'x python':>9s}")
    for name in rates:
        note = f"   timed on {len(subset)} of {Q} queries, time scaled x{Q / len(subset):g}" if name == "python" else ""
        print(f"{name:>16s} {seconds[name]:16.4f} {1e3 * seconds[name] / Q:11.3f} {rates[name]:12.4g} "
              f"{rates[name] / rates['python']:9.1f}{note}")
    if "numba" in rates:
        print(f"numba / numpy: {rates['numba'] / rates['numpy']:.1f}x")
    print(f"checked: {checked}")
    for backend in backends:
        print(f"first call {backend}: {first_call[backend]:.3f} s (median later call {seconds[backend]:.3f} s)")
    if "numba" in backends and args.cache_check:
        again = first_call_in_new_process()
        verdict = "cache works" if again < 0.5 * first_call["numba"] else "recompiled: the on-disk cache was not used"
        print(f"first numba call in a new process with the on-disk cache filled (1 query): {again:.3f} s ({verdict})")
        probe = SamplerSettings()  # the probe's one query (3 goods, 10 bads) at the default settings
        record("first_call_new_process", "numba", probe, 1, probe.n_walks * (probe.walk_length + 1), again)
    for backend in backends:
        record("first_call", backend, settings, Q, Q * per_query, first_call[backend])
    return seconds


def sweep(title, parameter, values, settings_of, args, n_good, n_bad, rows, backends, record, part):
    Q = len(rows)
    print(f"\n{title}, {Q} queries, median of {args.repeats}")
    print(f"{parameter:>12s} {'walks':>6s} {'states/q':>9s}  "
          + "  ".join(f"{b + ' ms/query':>16s} {b + ' ns/state':>16s}" for b in backends))
    times = {b: [] for b in backends}
    for value in values:
        settings = settings_of(value)
        per_query = settings.n_walks * (settings.walk_length + 1)
        cells = []
        for backend in backends:
            seconds = median_of(lambda: draw_walks(n_good, n_bad, rows, settings, backend=backend), args.repeats)
            times[backend].append(seconds)
            record(part, backend, settings, Q, Q * per_query, seconds)
            cells.append(f"{1e3 * seconds / Q:16.3f} {1e9 * seconds / (Q * per_query):16.1f}")
        print(f"{value:12d} {settings.n_walks:6d} {per_query:9d}  " + "  ".join(cells))
    print(f"{'log-log slope':>29s}  " + "  ".join(f"{loglog_slope(values, times[b]):16.2f} {'':>16s}"
                                                   for b in backends) + "   (1 = linear)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--python-queries", type=int, default=50,
                        help="queries the plain-Python reference is timed on (time scaled to --queries)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample-size", type=int, default=100)
    parser.add_argument("--walk-length", type=int, default=10)
    parser.add_argument("--sample-sizes", type=int, nargs="+", default=[50, 100, 200, 400, 800])
    parser.add_argument("--walk-lengths", type=int, nargs="+", default=[5, 10, 20, 40, 80])
    parser.add_argument("--sweep-walks", type=int, default=10, help="walks per query in the walk_length sweep")
    parser.add_argument("--project-numba-cache", action="store_true",
                        help="use numba's usual on-disk cache instead of a fresh temporary one")
    parser.add_argument("--no-cache-check", dest="cache_check", action="store_false",
                        help="skip timing the first numba call of a second process")
    parser.add_argument("--csv", metavar="PATH", help="also write every measurement to this CSV file")
    args = parser.parse_args()

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_sampler_numba_") as cache_dir:
        if not args.project_numba_cache:
            # before numba is first imported (swap_sampler imports it lazily): the first call
            # below is then a real compilation, and the project's cache is left untouched
            os.environ["NUMBA_CACHE_DIR"] = cache_dir
        backends = BACKENDS if numba_available() else ("numpy",)
        if "numba" not in backends:
            print("numba is not installed: numpy backend only")
        n_good, n_bad, labels, mask = make_queries(args.queries, args.seed)
        rows = np.arange(args.queries)
        print(f"{args.queries} synthetic queries (seed {args.seed}): n+ in 1..15 (mean {n_good.mean():.1f}), "
              f"n- in 5..100 (mean {n_bad.mean():.1f})\n")
        records = []

        def record(part, backend, settings, queries, states, seconds):
            records.append({"part": part, "backend": backend, "sample_size": settings.sample_size,
                            "walk_length": settings.walk_length, "n_walks": settings.n_walks, "queries": queries,
                            "states": states, "seconds": seconds, "states_per_second": states / seconds})

        settings = SamplerSettings(sample_size=args.sample_size, walk_length=args.walk_length, seed=args.seed)
        walk_seconds = throughput(args, n_good, n_bad, rows, settings, backends, record)

        T = args.walk_length
        sweep(f"2a. time against sample_size at walk_length {T}", "sample_size", args.sample_sizes,
              lambda s: SamplerSettings(sample_size=s, walk_length=T, seed=args.seed),
              args, n_good, n_bad, rows, backends, record, "sweep_sample_size")
        W = args.sweep_walks
        sweep(f"2b. time against walk_length at {W} walks per query (sample_size = {W} (T + 1))", "walk_length",
              args.walk_lengths, lambda t: SamplerSettings(sample_size=W * (t + 1), walk_length=t, seed=args.seed),
              args, n_good, n_bad, rows, backends, record, "sweep_walk_length")

        print(f"\n3. draw_sample (walks + dedupe + y* + coefficients), sample_size {settings.sample_size}, "
              f"walk_length {settings.walk_length}, {args.queries} queries, median of {args.repeats}")
        print(f"{'backend':>8s} {'draw_sample s':>14s} {'ms / query':>11s} {'walks alone s':>14s} {'walks share':>12s}")
        for backend in backends:
            seconds = median_of(lambda: draw_sample(labels, mask, rel_threshold=1.0, gain="auc",
                                                         settings=settings, backend=backend), args.repeats)
            per_query = settings.n_walks * (settings.walk_length + 1)
            record("draw_sample", backend, settings, args.queries, args.queries * per_query, seconds)
            print(f"{backend:>8s} {seconds:14.4f} {1e3 * seconds / args.queries:11.3f} {walk_seconds[backend]:14.4f} "
                  f"{walk_seconds[backend] / seconds:12.0%}")

    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(records[0]))
            writer.writeheader()
            writer.writerows(records)
        print(f"\nwrote {len(records)} rows to {args.csv}")
    print(f"\ntotal {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
