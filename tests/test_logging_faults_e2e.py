"""Nothing lost when an aggregate job's MLflow logging fails after a fold was retrained: the real
`snakemake` CLI on a one-fold, one-method study, the fold forced to retrain while the SQLite store
is locked by another process, or with the aggregate job killed (-9) while its new fold run is half
logged. The next plain run logs what the failed one could not: exactly one live, finished fold run
per fold and method (this training's, with its metrics), the parent's means updated, no run left
RUNNING or soft-deleted, and tables equal to the uninterrupted run's."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from rankstudy.pipeline import layout
from pipeline_runs import SNAKEMAKE, git, job_counts, make_workdir, snakemake

pytestmark = pytest.mark.slow

ONE_FOLD = {"folds": [1], "run_methods": ["ranknet"], "synthetic": {"n_queries": 60, "n_features": 17},
            "features": {"normalization": "zscore", "first_order": True, "rho": []},
            "report": {"baseline": "ranknet", "metrics": ["ndcg@10"], "n_resamples": 200}}
KEYS = dict(study="default", dataset="synthetic", featureset="first", method="ranknet")
FOLD_DIR = layout.fill(layout.FOLD_DIR, fold=1, **KEYS)
TABLE = layout.fill(layout.TABLES, study="default", dataset="synthetic") + ".csv"


@pytest.fixture
def workdir(tmp_path):
    workdir = make_workdir(tmp_path, ONE_FOLD)
    git(workdir, "init", "-q")
    git(workdir, "add", ".")
    git(workdir, "commit", "-qm", "the user's clone")
    snakemake(workdir)
    return workdir


def failing_rerun(workdir: Path) -> subprocess.CompletedProcess:
    """The fold forced to retrain; the run is expected to fail in its aggregate job."""
    out = subprocess.run([SNAKEMAKE, "--cores", "2", "--configfile", "test.yaml", "--replace-workflow-config",
                          "--forcerun", f"{FOLD_DIR}/model.json"], cwd=workdir, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode != 0 and "Error in rule aggregate" in out.stderr, out.stderr[-3000:]
    assert not (workdir / layout.fill(layout.METHOD_SUMMARY, **KEYS)).exists()
    return out


def all_runs(workdir: Path) -> pd.DataFrame:
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{workdir}/results/mlflow.db")
    exp = client.get_experiment_by_name("rankstudy")
    return pd.DataFrame([{"key": r.data.tags.get("rankstudy.key"), "level": r.data.tags.get("rankstudy.level"),
                          "stage": r.info.lifecycle_stage, "status": r.info.status,
                          "uid": r.data.tags.get("rankstudy.uid"), "metrics": r.data.metrics}
                         for r in client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL)])


def assert_the_next_run_logs_what_was_missing(workdir: Path, table_before: pd.DataFrame) -> None:
    out = snakemake(workdir)
    assert "Nothing to be done" not in out.stdout + out.stderr, "the next run left the failed logging undone"
    counts = job_counts(out.stdout + out.stderr)
    assert counts.get("aggregate") == 1 and "train" not in counts
    runs = all_runs(workdir)
    assert (runs.stage == "active").all() and (runs.status == "FINISHED").all(), runs  # none RUNNING or left deleted
    folds = runs[runs.level == "fold"]
    assert folds.key.tolist() == ["default/synthetic/first/ranknet/fold1"]
    fit = json.loads((workdir / FOLD_DIR / "fit.json").read_text())
    fold_summary = json.loads((workdir / FOLD_DIR / "summary.json").read_text())
    run = folds.iloc[0]
    assert run.uid == fit["uid"]  # this training's run, not the replaced one
    assert run.metrics["test.ndcg_at_10"] == pytest.approx(fold_summary["metrics"]["test.ndcg@10"])
    parent = runs[runs.level == "parent"]
    assert len(parent) == 1
    method = json.loads((workdir / layout.fill(layout.METHOD_SUMMARY, **KEYS)).read_text())
    assert parent.iloc[0].metrics["test.ndcg_at_10"] == pytest.approx(method["mean"]["test.ndcg@10"])
    # the retrained fold is the same deterministic training: the tables are the uninterrupted run's
    pd.testing.assert_frame_equal(pd.read_csv(workdir / TABLE), table_before)


def test_a_store_locked_by_another_process_loses_nothing(workdir):
    table = pd.read_csv(workdir / TABLE)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        "print('locked', flush=True)\n"
        "time.sleep(600)\n"), str(workdir / "results/mlflow.db")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        out = failing_rerun(workdir)
    finally:
        holder.kill()
        holder.wait()
    assert "database is locked" in out.stderr
    assert_the_next_run_logs_what_was_missing(workdir, table)


def kill_aggregate_mid_log(workdir: Path, db: Path, killed: list[int], stop: threading.Event) -> None:
    """kill -9 this workdir's aggregate job as soon as the store holds a RUNNING run: the new
    fold run is created but not yet finished."""
    while not stop.is_set():
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05) as con:
                running = con.execute("select count(*) from runs where status = 'RUNNING'").fetchone()[0]
        except sqlite3.Error:  # the job holds the write lock
            running = 0
        if running:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                # Snakemake runs the script from this workdir's .snakemake/scripts
                if any(str(workdir).encode() in part and part.endswith(b"aggregate.py") for part in cmdline):
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(int(pid))
            return
        time.sleep(0.005)


def test_an_aggregate_job_killed_mid_log_loses_nothing(workdir):
    table = pd.read_csv(workdir / TABLE)
    killed: list[int] = []
    stop = threading.Event()
    watcher = threading.Thread(target=kill_aggregate_mid_log,
                               args=(workdir, workdir / "results/mlflow.db", killed, stop), daemon=True)
    watcher.start()
    try:
        failing_rerun(workdir)
    finally:
        stop.set()
        watcher.join()
    assert killed
    runs = all_runs(workdir)
    assert (runs.status == "RUNNING").any()  # the half-logged run the kill left behind
    assert_the_next_run_logs_what_was_missing(workdir, table)
