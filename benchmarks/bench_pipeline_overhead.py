"""Per-job fixed overhead of the pipeline.

Runs the real `snakemake` CLI with 1 core on a tiny synthetic config (so job work is small and
the fixed cost dominates) in a temporary copy of the workflow, then compares:
  - wall time per job,
  - the time the jobs spent inside their step (the "done in X s" line of every job log),
  - a reference measured in the same session: one `python -c "import rankstudy.tracking, ..."`
    process start with the imports a job needs.
Overhead per job = (wall - sum of in-step time) / jobs; it is quoted as a ratio to the reference.
Per rule: each job's process time (its `benchmark:` file) minus its step's time (start-up,
imports, reading the inputs' metadata, MLflow for the aggregate jobs).
`--default-run`: instead, the default pipeline exactly as the quick start runs it (config/config.yaml,
`--cores 2`): its wall time against the sum of its steps' own time over the cores (spine v4's
target: at most 2x).

    python benchmarks/bench_pipeline_overhead.py [--folds 2] [--default-run]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--default-run", action="store_true",
                        help="time the default pipeline (config/config.yaml, --cores 2) against its steps' own time")
    args = parser.parse_args()
    if args.default_run:
        default_run()
        return
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import rankstudy.tracking.runs, rankstudy.rankers.registry, rankstudy.evaluation.metrics, pandas"],
                   check=True)
    reference = time.perf_counter() - start
    numpy_start = bare_numpy_start()
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config.update({"folds": list(range(1, args.folds + 1)), "synthetic": {"n_queries": 30, "n_features": 17},
                   "methods": {"ranknet": {"kind": "linear", "params": {"loss": "ranknet", "max_iter": 5}}},
                   "features": {"normalization": "zscore", "first_order": True, "rho": []},
                   "report": {"baseline": "ranknet", "metrics": ["ndcg@10"], "n_resamples": 100}})
    wall, steps, per_rule = run_workflow(config, cores=1)
    inside = sum(steps.values())
    jobs = len(steps)
    overhead = (wall - inside) / jobs
    print(f"reference (python start + job imports): {reference:.2f} s")
    print(f"{jobs} jobs, wall {wall:.1f} s, inside steps {inside:.1f} s")
    print(f"fixed overhead per job: {overhead:.2f} s = {overhead / reference:.2f} x reference "
          f"(includes Snakemake's own scheduling between jobs; target < 3 s)")
    print(f"bare `python -c 'import numpy'`: {numpy_start:.2f} s (median of 5, this session)")
    per_rule["x_numpy_start"] = per_rule["overhead_s"] / numpy_start
    print("\nper rule, from each job's benchmark file (the job's process) and its log (the step inside it);"
          "\nx_numpy_start: the job's fixed cost over a bare numpy start (spine v4's target for train and evaluate: <= 2):")
    print(per_rule.to_markdown(index=False, floatfmt=".2f"))


def default_run(cores: int = 2) -> None:
    """The quick start's pipeline: wall against sum(steps) / cores."""
    wall, steps, per_rule = run_workflow(None, cores)
    inside = sum(steps.values())
    floor = inside / cores
    print(f"default run: {len(steps)} jobs on {cores} cores, wall {wall:.1f} s; steps' own time {inside:.1f} s, "
          f"/ {cores} cores = {floor:.1f} s; wall = {wall / floor:.2f} x that (spine v4's target: <= 2)")
    print(per_rule.to_markdown(index=False, floatfmt=".2f"))


def run_workflow(config: dict | None, cores: int) -> tuple[float, dict[Path, float], pd.DataFrame]:
    """`snakemake --cores N` in a temporary copy of the workflow, with ``config`` as its configfile
    (None: config/config.yaml as it is); its wall time, each job's time inside its step (the "done
    in X s" lines of its log) and the per-rule table of :func:`rule_overheads`."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ("Snakefile", "workflow", "config", "environment.yml"):
            src = REPO / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
        args = []
        if config is not None:
            (work / "bench.yaml").write_text(yaml.safe_dump(config))
            args = ["--configfile", "bench.yaml", "--replace-workflow-config"]
        start = time.perf_counter()
        out = subprocess.run([str(BIN / "snakemake"), "--cores", str(cores), *args, "--quiet"], cwd=work,
                             capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        if out.returncode:
            sys.exit(out.stderr[-3000:])
        steps = {log: sum(float(m.group(1)) for m in re.finditer(r"done in ([\d.]+) s", log.read_text()))
                 for log in (work / "results/logs").rglob("*.log")}
        return wall, steps, rule_overheads(work, steps)


def bare_numpy_start(repeats: int = 5) -> float:
    """Median wall seconds of a Python process that only imports numpy: the floor of any job."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import numpy"], check=True)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def rule_overheads(work: Path, steps: dict[Path, float]) -> pd.DataFrame:
    """Seconds of each job's process (its benchmark file) against the step it ran (its log)."""
    rows = []
    for log, step in steps.items():
        rel = log.relative_to(work / "results/logs").with_suffix(".tsv")
        bench = work / "results/benchmarks" / rel
        if bench.exists():
            job = float(pd.read_csv(bench, sep="\t")["s"].iloc[-1])
            rows.append({"rule": rel.parts[0], "job_s": job, "step_s": step, "overhead_s": job - step})
    table = pd.DataFrame(rows).groupby("rule").agg(
        jobs=("job_s", "size"), job_s=("job_s", "mean"), step_s=("step_s", "mean"),
        overhead_s=("overhead_s", "mean"), overhead_max_s=("overhead_s", "max"))
    return table.reset_index()


if __name__ == "__main__":
    main()
