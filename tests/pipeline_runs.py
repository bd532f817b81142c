"""The end-to-end tests' tools: a copy of the workflow as a user's clone has it (a work folder),
the real `snakemake` CLI run in it, the run's outputs and MLflow store read back, and a finished
run copied with its timestamps and Snakemake's metadata, so a test that changes a run starts
from a copy instead of running the pipeline again (tests/conftest.py builds the shared runs once
per session)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from rankstudy.data.registry import load_registry
from rankstudy.pipeline import layout

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def run_dir(workdir: Path, method: str, fold: int, featureset: str = "first", dataset: str = "synthetic",
            study: str = "default") -> Path:
    """A fold's run folder, as rankstudy.pipeline.layout names it."""
    return workdir / layout.fill(layout.FOLD_DIR, study=study, dataset=dataset, featureset=featureset,
                                 method=method, fold=fold)


def protocol_of(workdir: Path, configfile: str = "test.yaml", dataset: str = "synthetic") -> layout.Protocol:
    """The data, cleaning and norm names a run of ``configfile`` gives ``dataset``."""
    config = yaml.safe_load((workdir / configfile).read_text())
    entry = load_registry(workdir / config.get("registry", "config/datasets.yaml"))[dataset]
    return layout.protocol(dataset, entry, config)


def features_dir(workdir: Path, featureset: str, fold: int, configfile: str = "test.yaml",
                 dataset: str = "synthetic") -> Path:
    keys = protocol_of(workdir, configfile, dataset).keys()
    return workdir / layout.fill(layout.FEATURES_DIR, featureset=featureset, fold=fold, **keys)


def make_workdir(tmp: Path, overrides: dict) -> Path:
    """A copy of the workflow as a user's clone has it, with a config file of our own."""
    for name in ("Snakefile", "workflow", "profiles", "config", "environment.yml"):
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp / name)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.update(overrides)
    (tmp / "test.yaml").write_text(yaml.safe_dump(config))
    return tmp


# For a run whose test reads no MLflow run: every job of the study but the logging, by Snakemake's
# own --omit-from (the log_runs job starts MLflow and its store, about 5 CPU-s; the tests that read
# the store run it)
NO_MLFLOW = ("--omit-from", "log_runs")

PROGRESS = re.compile(r"^(\d+) of (\d+) steps \(\d+%\) done\b")  # then the time left (profiles/default)
say = print  # tests/conftest.py replaces it with a writer past pytest's output capture


def snakemake(workdir: Path, *args: str, configfile: str = "test.yaml") -> subprocess.CompletedProcess:
    """Run the CLI; its progress lines go to the terminal as they come (a run takes minutes)."""
    cmd = [SNAKEMAKE, "--cores", "2", "--configfile", configfile, "--replace-workflow-config", *args]
    proc = subprocess.Popen(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # stdout is drained beside stderr: a dry run's long plan would fill the pipe and block snakemake
    stdout_chunks: list[str] = []
    reader = threading.Thread(target=lambda: stdout_chunks.append(proc.stdout.read()), daemon=True)
    reader.start()
    stderr, last = [], 0.0
    for line in proc.stderr:  # snakemake reports progress on stderr
        stderr.append(line)
        done = PROGRESS.match(line.strip())
        if done and (time.monotonic() - last > 15 or done.group(1) == done.group(2)):
            last = time.monotonic()
            say(f"  [snakemake in {workdir.name}] {line.strip()}")
    reader.join()
    stdout = "".join(stdout_chunks)
    out = subprocess.CompletedProcess(cmd, proc.wait(timeout=1800), stdout, "".join(stderr))
    if out.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{out.stdout[-5000:]}\n{out.stderr[-8000:]}")
    return out


def git(workdir: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.org", *args],
                   cwd=workdir, check=True, capture_output=True)


def job_counts(output: str) -> dict[str, int]:
    """Parse Snakemake's 'Job stats' table."""
    stats = output.split("Job stats:")[1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", stats, re.M)
            if m.group(1) != "total"}


def ndcg_at_10(labels: np.ndarray, scores: np.ndarray) -> float:
    """Independent per-query NDCG@10 (gain 2^r - 1, log2 discount, stable tie order)."""
    order = np.argsort(-scores, kind="stable")[:10]
    ideal = np.sort(labels)[::-1][:10]
    disc = 1 / np.log2(np.arange(2, 12))
    idcg = ((2 ** ideal - 1) * disc[: len(ideal)]).sum()
    return 0.0 if idcg == 0 else ((2 ** labels[order] - 1) * disc[: len(order)]).sum() / idcg


def fold_runs(workdir: Path) -> pd.DataFrame:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{workdir}/results/mlflow.db")
    exp = client.get_experiment_by_name("rankstudy")
    runs = client.search_runs([exp.experiment_id], max_results=10000)
    return pd.DataFrame([{"key": r.data.tags.get("rankstudy.key"), "level": r.data.tags.get("rankstudy.level"),
                          "id": r.info.run_id, "name": r.info.run_name, "start": r.info.start_time,
                          "end": r.info.end_time, "folds": r.data.tags.get("folds")} for r in runs])


# two folds, three cheap methods, first-order features and one second-order set (so the
# pair_correlations rule runs too); the SLURM test runs the same study
TINY = {
    "folds": [1, 2],
    "synthetic": {"n_queries": 60, "n_features": 17},
    "methods": {
        "pointwise": {"kind": "linear", "params": {"loss": "pointwise_mse"}, "grid": {"l2": [0.01, 1.0]}},
        "ranknet": {"kind": "linear", "params": {"loss": "ranknet"}, "grid": {"l2": [0.01]}},
        # threads: its own count; without one, a LightGBM method on a split this small gets 1
        "lambdamart": {"kind": "lambdamart", "params": {"n_estimators": 30, "num_leaves": 7}, "threads": 2},
    },
    "features": {"normalization": "zscore", "first_order": True, "rho": [0.1]},
    "report": {"baseline": "ranknet", "metrics": ["ndcg@10", "err", "map"], "n_resamples": 200},
}


def copy_run(workdir: Path, dest: Path) -> Path:
    """A finished run's work folder copied to ``dest``, as a user would copy their clone: every
    file keeps its modification time (copy2) and Snakemake's metadata (.snakemake) comes along,
    so Snakemake plans nothing for it; the MLflow store's artifact locations then name the
    copy's own artifact folder, so a rerun in the copy never touches the original's artifacts."""
    from rankstudy.tracking.relocate import relocate_artifacts

    shutil.copytree(workdir, dest, copy_function=shutil.copy2, symlinks=True, dirs_exist_ok=True)
    if (dest / "results" / "mlflow.db").exists():
        relocate_artifacts(dest / "results" / "mlflow.db")
    return dest
