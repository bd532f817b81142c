"""Nothing lost when the MLflow logging fails after a fold was retrained (the log_runs job logs every
run of a study and data set): the real `snakemake` CLI on a one-fold, one-method study,
the fold forced to retrain while the SQLite store is locked by another process, with the log_runs
job killed (-9) while its new fold run is half logged, with the store's disk full (a small tmpfs,
root only), or with the tracking server killed while the log_runs job logs to it. The next plain run logs what the failed one could not: exactly one live, finished fold run
per fold and method (this training's, with its metrics), the parent's means updated, no run left
RUNNING or soft-deleted, and tables equal to the uninterrupted run's."""

from __future__ import annotations

import errno
import json
import os
import shutil
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
from mlflow_rest import free_port, wait_for_health
from pipeline_runs import SNAKEMAKE, copy_run, git, job_counts, make_workdir, snakemake

pytestmark = pytest.mark.slow

ONE_FOLD = {"folds": [1], "run_methods": ["ranknet"], "synthetic": {"n_queries": 60, "n_features": 17},
            "features": {"normalization": "zscore", "first_order": True, "rho": []},
            "report": {"baseline": "ranknet", "metrics": ["ndcg@10"], "n_resamples": 200}}
KEYS = dict(study="default", dataset="synthetic", featureset="first", method="ranknet")
FOLD_DIR = layout.fill(layout.FOLD_DIR, fold=1, **KEYS)
TABLE = layout.fill(layout.TABLES, study="default", dataset="synthetic") + ".csv"


def user_clone(folder: Path) -> Path:
    """The one-fold study run once in a user's clone of the workflow."""
    workdir = make_workdir(folder, ONE_FOLD)
    git(workdir, "init", "-q")
    git(workdir, "add", ".")
    git(workdir, "commit", "-qm", "the user's clone")
    snakemake(workdir)
    return workdir


@pytest.fixture(scope="module")
def base_clone(tmp_path_factory):
    """The one-fold study run once for the module's tests; each works on a copy (copy_run)."""
    return user_clone(tmp_path_factory.mktemp("one-fold"))


@pytest.fixture
def workdir(base_clone, tmp_path):
    return copy_run(base_clone, tmp_path / "work")


def failing_rerun(workdir: Path) -> subprocess.CompletedProcess:
    """The fold forced to retrain; the run is expected to fail in its log_runs job, after the
    tables were made (they do not wait for the store)."""
    out = subprocess.run([SNAKEMAKE, "--cores", "2", "--configfile", "test.yaml", "--replace-workflow-config",
                          "--forcerun", f"{FOLD_DIR}/model.json"], cwd=workdir, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode != 0 and "Error in rule log_runs" in out.stderr, out.stderr[-3000:]
    assert (workdir / layout.fill(layout.METHOD_SUMMARY, **KEYS)).exists() and (workdir / TABLE).exists()
    assert not (workdir / layout.fill(layout.RUNS_LOGGED, study="default", dataset="synthetic")).exists()
    return out


def show_failure(out: subprocess.CompletedProcess) -> None:
    """The failed run's error lines, for the test's output (pytest -s)."""
    print("the failed run said:", *[line for line in out.stderr.splitlines() if "rankstudy" in line or "Error" in line],
          sep="\n  ")


def all_runs(workdir: Path, uri: str | None = None) -> pd.DataFrame:
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri or f"sqlite:///{workdir}/results/mlflow.db")
    exp = client.get_experiment_by_name("rankstudy")
    return pd.DataFrame([{"key": r.data.tags.get("rankstudy.key"), "level": r.data.tags.get("rankstudy.level"),
                          "stage": r.info.lifecycle_stage, "status": r.info.status,
                          "uid": r.data.tags.get("rankstudy.uid"), "metrics": r.data.metrics}
                         for r in client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL)])


def assert_the_next_run_logs_what_was_missing(workdir: Path, table_before: pd.DataFrame, uri: str | None = None) -> None:
    out = snakemake(workdir)
    assert "Nothing to be done" not in out.stdout + out.stderr, "the next run left the failed logging undone"
    counts = job_counts(out.stdout + out.stderr)
    assert counts.get("log_runs") == 1 and "train" not in counts and "tables" not in counts, counts
    runs = all_runs(workdir, uri)
    assert (runs.stage == "active").all() and (runs.status == "FINISHED").all(), runs  # none RUNNING or left deleted
    folds = runs[runs.level == "fold"]
    assert folds.key.tolist() == ["default/synthetic/first/ranknet/fold1"]
    fit = json.loads((workdir / FOLD_DIR / "fit.json").read_text())
    fold_summary = json.loads((workdir / FOLD_DIR / "summary.json").read_text())
    run = folds.iloc[0]
    assert run.uid == fit["uid"]  # this training's run, not the replaced one
    assert run.metrics["test.ndcg10"] == pytest.approx(fold_summary["metrics"]["test.ndcg@10"])
    parent = runs[runs.level == "parent"]
    assert len(parent) == 1
    method = json.loads((workdir / layout.fill(layout.METHOD_SUMMARY, **KEYS)).read_text())
    assert parent.iloc[0].metrics["test.ndcg10"] == pytest.approx(method["mean"]["test.ndcg@10"])
    # the retrained fold is the same deterministic training: the tables are the uninterrupted run's
    pd.testing.assert_frame_equal(pd.read_csv(workdir / TABLE), table_before)


def test_a_store_locked_by_another_process_loses_nothing(workdir, monkeypatch):
    table = pd.read_csv(workdir / TABLE)
    monkeypatch.setenv("RANKSTUDY_MLFLOW_LOCK_WAIT", "2")  # the job's retries give up soon
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
    # after its retries, one line naming the store, no traceback
    db = workdir / "results" / "mlflow.db"
    assert f"rankstudy log_runs: the MLflow store {db} stayed locked by another process" in out.stderr, \
        out.stderr[-3000:]
    assert "Traceback" not in out.stderr and "OperationalError" not in out.stderr, out.stderr[-3000:]
    assert_the_next_run_logs_what_was_missing(workdir, table)


def holds_a_running_run(db: Path) -> bool:
    """Whether the SQLite store holds a RUNNING run (a fold run created, not yet finished); no
    while its writer holds the lock."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05) as con:
            return con.execute("select count(*) from runs where status = 'RUNNING'").fetchone()[0] > 0
    except sqlite3.Error:
        return False


def kill_log_runs_mid_log(workdir: Path, db: Path, killed: list[int], stop: threading.Event) -> None:
    """kill -9 this workdir's log_runs job as soon as the store holds a RUNNING run: the new
    fold run is created but not yet finished."""
    while not stop.is_set():
        if holds_a_running_run(db):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                # Snakemake runs the script from this workdir's .snakemake/scripts
                if any(str(workdir).encode() in part and part.endswith(b"log_runs.py") for part in cmdline):
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(int(pid))
            return
        time.sleep(0.005)


def test_a_log_runs_job_killed_mid_log_loses_nothing(workdir):
    table = pd.read_csv(workdir / TABLE)
    killed: list[int] = []
    stop = threading.Event()
    watcher = threading.Thread(target=kill_log_runs_mid_log,
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


# ---------------------------------------------------------------- the store's disk full


def fill(folder: Path) -> Path:
    """A file in ``folder`` grown until its file system is full."""
    filler = folder / "filler"
    with open(filler, "wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def test_the_store_s_disk_full_loses_nothing(workdir, tmp_path):
    """The SQLite store and its artifacts moved onto a tmpfs (reached through symlinks) filled to
    the last byte while the fold retrains; then space is freed and the next plain run logs."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    disk = tmp_path / "store-disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        table = pd.read_csv(workdir / TABLE)
        results = workdir / "results"
        for name in ("mlflow.db", "mlartifacts"):
            (shutil.copytree if (results / name).is_dir() else shutil.copy2)(results / name, disk / name)
            (shutil.rmtree if (results / name).is_dir() else os.remove)(results / name)
            (results / name).symlink_to(disk / name)
        filler = fill(disk)
        out = failing_rerun(workdir)
        show_failure(out)
        # one line naming the store and the device, no traceback
        assert f"rankstudy log_runs: cannot write {results / 'mlflow.db'}: no space left on the device" in out.stderr
        assert "Traceback" not in out.stderr, out.stderr[-3000:]
        filler.unlink()  # the user frees some space
        assert_the_next_run_logs_what_was_missing(workdir, table)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


# ---------------------------------------------------------------- the tracking server killed


def start_server(folder: Path, port: int) -> subprocess.Popen:
    """`mlflow server` on 127.0.0.1:``port`` with its store in ``folder`` (in a session of its own,
    so that a kill reaches its worker too), once it answers."""
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{folder / 'server.db'}",
         "--artifacts-destination", str(folder / "server-artifacts"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--allowed-hosts", f"127.0.0.1:{port},localhost:{port}"],
        env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        stdout=open(folder / "server.log", "a"), stderr=subprocess.STDOUT, cwd=folder, start_new_session=True)
    wait_for_health(url, server, timeout=75, log=folder / "server.log")
    return server


def stop(server: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    try:
        os.killpg(server.pid, sig)
    except ProcessLookupError:
        pass
    server.wait(timeout=30)


def kill_server_mid_log(db: Path, server: subprocess.Popen, killed: list[bool], stop_watching: threading.Event) -> None:
    """kill -9 the server (and its worker) as soon as its store holds a RUNNING run: the
    log_runs job's new fold run is created but not yet finished."""
    while not stop_watching.is_set():
        if holds_a_running_run(db):
            os.killpg(server.pid, signal.SIGKILL)
            killed.append(True)
            return
        time.sleep(0.005)


def test_the_tracking_server_killed_mid_log_loses_nothing(tmp_path, monkeypatch):
    folder = tmp_path / "server"
    folder.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(folder, port)
    try:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", url)
        # the jobs purge the runs they replace through the server's database (no REST API purges)
        monkeypatch.setenv("RANKSTUDY_MLFLOW_BACKEND_STORE_URI", f"sqlite:///{folder / 'server.db'}")
        (tmp_path / "work").mkdir()
        workdir = user_clone(tmp_path / "work")
        table = pd.read_csv(workdir / TABLE)
        killed: list[bool] = []
        stop_watching = threading.Event()
        watcher = threading.Thread(target=kill_server_mid_log, args=(folder / "server.db", server, killed, stop_watching),
                                   daemon=True)
        watcher.start()
        # the failing run gives up on the dead server at once instead of retrying for about 20 s
        # (store.py's default; how long a job waits is tests/test_tracking.py's subject)
        try:
            with monkeypatch.context() as failing:
                failing.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
                out = failing_rerun(workdir)
        finally:
            stop_watching.set()
            watcher.join()
        assert killed
        server.wait(timeout=30)
        assert (all_runs(workdir, f"sqlite:///{folder / 'server.db'}").status == "RUNNING").any()  # half logged
        show_failure(out)
        server = start_server(folder, port)  # the server is back, on the same store
        assert_the_next_run_logs_what_was_missing(workdir, table, url)
    finally:
        stop(server)
