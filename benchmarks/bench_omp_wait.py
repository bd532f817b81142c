"""LightGBM beside a busy neighbour, with OpenMP's idle threads spinning (OMP_WAIT_POLICY=active,
what LightGBM's runtime does by default) or sleeping (passive, what rankstudy's jobs set): the
wall seconds of 100 LambdaMART rounds on two threads while a CPU hog runs on one core, each policy
in a fresh process (the policy is read when the OpenMP runtime loads), alternating, best and
median of ``--repeats``; and the same without the hog, as the reference.

    python benchmarks/bench_omp_wait.py [--repeats 5] [--queries 400]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys

TRAIN = r"""
import json, sys, time
import numpy as np
from rankstudy.data.rankdata import RankData
from rankstudy.rankers.lambdamart import LambdaMART
from rankstudy.util.threads import use_job_threads
use_job_threads(2)
rng = np.random.default_rng(0)
q = int(sys.argv[1]); n = 40 * q
X = rng.normal(size=(n, 46)); y = np.clip(np.round(X[:, 0] + rng.normal(size=n)), 0, 2)
data = RankData(X=X, y=y, qid=np.repeat(np.arange(q), 40), docid=np.arange(n), offsets=np.arange(0, n + 1, 40))
start = time.perf_counter()
LambdaMART(n_estimators=100, early_stopping_rounds=0).fit(data)
print(json.dumps(time.perf_counter() - start))
"""


def hog(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10000))


def run(policy: str, queries: int) -> float:
    env = dict(os.environ, OMP_WAIT_POLICY=policy)
    out = subprocess.run([sys.executable, "-c", TRAIN, str(queries)], env=env, capture_output=True, text=True,
                         check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    results = {}
    for loaded in (False, True):
        stop = multiprocessing.Event()
        neighbour = multiprocessing.Process(target=hog, args=(stop,), daemon=True) if loaded else None
        if neighbour:
            neighbour.start()
        times = {"active": [], "passive": []}
        for _ in range(args.repeats):
            for policy in times:
                times[policy].append(run(policy, args.queries))
        if neighbour:
            stop.set()
            neighbour.join()
        results["with a busy neighbour" if loaded else "idle"] = times
    print(f"100 LambdaMART rounds on 2 threads, {args.queries} queries of 40 documents; wall seconds")
    print(f"{'machine':24s} {'policy':8s} {'best':>7s} {'median':>7s} {'max':>7s}")
    for machine, times in results.items():
        for policy, values in times.items():
            print(f"{machine:24s} {policy:8s} {min(values):7.2f} {statistics.median(values):7.2f} {max(values):7.2f}")
        ratio = statistics.median(times["active"]) / statistics.median(times["passive"])
        print(f"{machine:24s} median active / passive = {ratio:.2f}")


if __name__ == "__main__":
    main()
