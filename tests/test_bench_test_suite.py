"""benchmarks/bench_test_suite.py, run as a user runs it, on a small suite of its own: each test's
CPU (its own and the processes it waited for), the cores busy, and the pipeline jobs' CPU by rule
from the benchmark files the tests left."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SUITE = '''
import subprocess, sys

def test_burns_in_a_child():
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)

def test_leaves_a_benchmark_file(tmp_path):
    bench = tmp_path / "work" / "results" / "benchmarks" / "train" / "default" / "fold1.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\\th:m:s\\tmax_rss\\tcpu_time\\n1.5\\t0:00:01\\t100.0\\t1.25\\n")
'''


def test_the_report_names_each_tests_cpu_the_cores_and_the_rules(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_small.py").write_text(SUITE)
    out = tmp_path / "records"
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_test_suite.py"), "--out", str(out),
                           str(suite), "-q", "-p", "no:cacheprovider"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    report = done.stdout
    assert re.search(r"pytest: 2 tests, \d+ s wall; cores busy while tests ran: \d\.\d\d of \d+", report), report
    assert re.search(r"CPU of the machine while tests ran: about \d+ s, so about -?\d+ s outside", report), report
    burned = re.search(r"^\s+([\d.]+)\s+[\d.]+\s+\S*test_small.py::test_burns_in_a_child$", report, re.M)
    assert burned and float(burned.group(1)) > 0.05, report  # the child's CPU counts as the test's
    assert re.search(r"^\s+train\s+1 jobs\s+1\.2 CPU s \(1\.25 a job\)$", report, re.M), report
    assert len(list(out.glob("tests-*.jsonl"))) == 1 and (out / "stat.log").read_text()
