"""Per-job fixed overhead of the pipeline.

Runs the real `snakemake` CLI with 1 core on a tiny synthetic config (so job work is small and
the fixed cost dominates) in a temporary copy of the workflow, then compares:
  - wall time per job,
  - the time the jobs spent inside their step (the "done in X s" line of every job log),
  - a reference measured in the same session: one `python -c "import rankstudy.tracking, ..."`
    process start with the imports a job needs.
Overhead per job = (wall - sum of in-step time) / jobs; it is quoted as a ratio to the reference.

    python benchmarks/bench_pipeline_overhead.py [--folds 2]
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

import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folds", type=int, default=2)
    args = parser.parse_args()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import rankstudy.tracking.runs, rankstudy.rankers.registry, rankstudy.evaluation.metrics, pandas"],
                   check=True)
    reference = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ("Snakefile", "workflow", "config", "environment.yml"):
            src = REPO / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
        config = yaml.safe_load((REPO / "config/config.yaml").read_text())
        config.update({"folds": list(range(1, args.folds + 1)), "synthetic": {"n_queries": 30, "n_features": 17},
                       "methods": {"ranknet": {"kind": "linear", "params": {"loss": "ranknet", "max_iter": 5}}},
                       "features": {"normalization": "zscore", "first_order": True, "rho": []},
                       "report": {"baseline": "ranknet", "metrics": ["ndcg@10"], "n_resamples": 100}})
        (work / "bench.yaml").write_text(yaml.safe_dump(config))
        start = time.perf_counter()
        out = subprocess.run([str(BIN / "snakemake"), "--cores", "1", "--configfile", "bench.yaml",
                              "--replace-workflow-config", "--quiet"], cwd=work, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if out.returncode:
            sys.exit(out.stderr[-3000:])
        logs = list((work / "results/logs").rglob("*.log"))
        inside = sum(float(m.group(1)) for log in logs
                     for m in re.finditer(r"done in ([\d.]+) s", log.read_text()))
    jobs = len(logs)
    overhead = (wall - inside) / jobs
    print(f"reference (python start + job imports): {reference:.2f} s")
    print(f"{jobs} jobs, wall {wall:.1f} s, inside steps {inside:.1f} s")
    print(f"fixed overhead per job: {overhead:.2f} s = {overhead / reference:.2f} x reference")


if __name__ == "__main__":
    main()
