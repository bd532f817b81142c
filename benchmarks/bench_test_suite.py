"""Where the test suite's time goes: pytest run once as the README's test command runs it (the
project's addopts: three pytest-xdist workers), with

- per test: its wall seconds and CPU seconds, of the worker's own process and of the processes
  it waited for (``resource.getrusage``: a SLURM job or a server outside the test's process tree
  is not counted);
- the machine: how many of its cores were busy while pytest ran (``/proc/stat`` every 2 s): near
  all of them means only less CPU makes the suite faster, not more workers or another order;
- per pipeline rule: the CPU seconds the jobs of the tests' Snakemake runs wrote to their
  ``benchmark:`` files (a rerun overwrites its job's file: a lower bound).

The same file is the pytest plugin that records the tests (``-p bench_test_suite``, found on the
PYTHONPATH this script sets).

    python benchmarks/bench_test_suite.py [--out DIR] [pytest args...]   # e.g. -m unit
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OUT_ENV = "RANKSTUDY_BENCH_TEST_SUITE_OUT"


# ---- the plugin, in each process that runs tests (the workers under pytest-xdist)

def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, children, start = *_cpu(), time.monotonic()
    yield
    own_after, children_after = _cpu()
    record = {"test": item.nodeid, "start": start, "end": time.monotonic(), "own_cpu": own_after - own,
              "children_cpu": children_after - children}
    with open(Path(os.environ[OUT_ENV]) / f"tests-{os.getpid()}.jsonl", "a") as out:
        out.write(json.dumps(record) + "\n")


# ---- the script

def cores_busy(stat_lines: list[str]) -> list[tuple[float, float, float]]:
    """(from, to, busy cores) between successive ``<monotonic> <ncores> <'cpu' line of /proc/stat>``
    samples: the share of the cores' time neither idle nor waiting on I/O, times the cores."""
    samples = []
    for line in stat_lines:
        when, cores, _, *ticks = line.split()
        ticks = [int(t) for t in ticks]
        samples.append((float(when), int(cores), sum(ticks) - ticks[3] - ticks[4], sum(ticks)))
    return [(t0, t1, (b1 - b0) / (a1 - a0) * cores)
            for (t0, _, b0, a0), (t1, cores, b1, a1) in zip(samples, samples[1:]) if a1 > a0]


def sample_stat(path: Path, stop: threading.Event) -> None:
    with open(path, "w") as out:
        while True:  # one sample more once stopped: the last interval ends after the last test
            with open("/proc/stat") as stat:
                out.write(f"{time.monotonic()} {os.cpu_count()} {stat.readline()}")
            out.flush()
            if stop.is_set():
                return
            stop.wait(2.0)


def rule_cpu(basetemp: Path) -> dict[str, tuple[int, float]]:
    """{rule: (jobs, CPU seconds)} from the benchmark files under the tests' work folders
    (``results/benchmarks/<rule>/...``, the last row of each, as bench_scale.py reads them)."""
    jobs: collections.Counter = collections.Counter()
    cpu: collections.Counter = collections.Counter()
    for folder in basetemp.rglob("results/benchmarks"):
        for tsv in folder.rglob("*.tsv"):
            with open(tsv) as f:
                rows = list(csv.DictReader(f, delimiter="\t"))
            if rows and rows[-1].get("cpu_time") not in (None, "", "NA"):
                rule = tsv.relative_to(folder).parts[0]
                jobs[rule] += 1
                cpu[rule] += float(rows[-1]["cpu_time"])
    return {rule: (jobs[rule], cpu[rule]) for rule in jobs}


def report(out: Path, basetemp: Path, wall: float) -> str:
    tests = [json.loads(line) for path in out.glob("tests-*.jsonl") for line in path.read_text().splitlines()]
    if not tests:
        return "no test ran"
    start, end = min(t["start"] for t in tests), max(t["end"] for t in tests)
    # every interval that overlaps the tests' span (the first and the last reach past it)
    busy = [b for t0, t1, b in cores_busy((out / "stat.log").read_text().splitlines()) if t1 >= start and t0 <= end]
    lines = [f"pytest: {len(tests)} tests, {wall:.0f} s wall; cores busy while tests ran: "
             f"{sum(busy) / max(len(busy), 1):.2f} of {os.cpu_count()} (mean of {len(busy)} samples)"]
    own, children = sum(t["own_cpu"] for t in tests), sum(t["children_cpu"] for t in tests)
    lines.append(f"CPU of the tests: {own + children:.1f} s ({own:.1f} in the workers, {children:.1f} in processes "
                 f"they waited for)")
    machine = sum(busy) / max(len(busy), 1) * (end - start)
    lines.append(f"CPU of the machine while tests ran: about {machine:.0f} s, so about {machine - own - children:.0f} s "
                 f"outside the tests' process trees (SLURM's jobs, servers, pytest's controller)")
    by_file: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for t in tests:
        spent = by_file[t["test"].split("::")[0]]
        spent[0] += t["own_cpu"]
        spent[1] += t["children_cpu"]
    lines.append("\nCPU s by file (workers + waited-for processes):")
    for name, (o, c) in sorted(by_file.items(), key=lambda kv: -sum(kv[1]))[:15]:
        lines.append(f"  {o + c:7.1f}  ({o:6.1f} + {c:6.1f})  {name}")
    lines.append("\nthe 15 dearest tests (CPU s, wall s):")
    for t in sorted(tests, key=lambda t: -(t["own_cpu"] + t["children_cpu"]))[:15]:
        lines.append(f"  {t['own_cpu'] + t['children_cpu']:7.1f} {t['end'] - t['start']:7.1f}  {t['test']}")
    rules = rule_cpu(basetemp)
    if rules:
        lines.append("\npipeline jobs by rule (from their benchmark files; reruns overwrite: a lower bound):")
        for rule, (n, cpu) in sorted(rules.items(), key=lambda kv: -kv[1][1]):
            lines.append(f"  {rule:18s} {n:4d} jobs {cpu:7.1f} CPU s ({cpu / n:.2f} a job)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="folder for the records (default: a new temporary one)")
    args, pytest_args = parser.parse_known_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-test-suite-"))
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("tests-*.jsonl"), out / "stat.log"]:
        old.unlink(missing_ok=True)
    basetemp = out / "basetemp"
    env = {**os.environ, OUT_ENV: str(out),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "benchmarks"), os.environ.get("PYTHONPATH")]))}
    stop = threading.Event()
    sampler = threading.Thread(target=sample_stat, args=(out / "stat.log", stop), daemon=True)
    sampler.start()
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "bench_test_suite", "--basetemp", str(basetemp),
                           *pytest_args], cwd=REPO, env=env)
    wall = time.monotonic() - began
    stop.set()
    sampler.join()
    print(report(out, basetemp, wall))
    print(f"\nrecords in {out}; pytest exited with {done.returncode}")
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
