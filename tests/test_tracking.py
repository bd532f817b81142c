"""rankstudy.tracking against a real SQLite store and a real `mlflow server` (no mocks)."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlflow_rest import free_port, rest, wait_for_health
from rankstudy.tracking.convergence import delete
from rankstudy.tracking.relocate import relocate_artifacts
from rankstudy.tracking.runs import (
    FOLD_RUN_COLUMNS,
    fold_runs,
    log_fold_run,
    log_method,
    log_parent_metrics,
    log_study_run,
    mlflow_key,
)
from rankstudy.tracking.store import BACKEND_ENV, mlflow_gc, resolve_tracking_uri, sqlite_path, \
    tracking_lock

from mlflow import MlflowClient  # noqa: E402  (after rankstudy.tracking set its env defaults)
from mlflow.entities import ViewType  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
EXPERIMENT = "rankstudy-test"
PARENT_KEY = "main/MQ2008/all/lambdamart"


@pytest.fixture(scope="session")
def initialized_db(tmp_path_factory) -> Path:
    """An empty store whose schema is already created (that takes seconds), to copy."""
    db = tmp_path_factory.mktemp("template") / "mlflow.db"
    fold_runs(f"sqlite:///{db}", EXPERIMENT)  # first use runs the schema migrations
    return db


@pytest.fixture
def fresh_uri(tmp_path: Path) -> str:
    """A store that does not exist yet."""
    return f"sqlite:///{tmp_path / 'results' / 'mlflow.db'}"


@pytest.fixture
def sqlite_uri(tmp_path: Path, initialized_db: Path) -> str:
    """A store with the schema in place but no experiment or run."""
    db = tmp_path / "results" / "mlflow.db"
    db.parent.mkdir()
    shutil.copyfile(initialized_db, db)
    return f"sqlite:///{db}"


@pytest.fixture
def artifacts(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "out"
    folder.mkdir()
    scores = folder / "scores.tsv"
    scores.write_text("qid\tdocid\tscore\n1\td1\t0.5\n")
    model = folder / "model.txt"
    model.write_text("tree\n")
    return [scores, model]


def fold_kwargs(fold: int, **overrides) -> dict:
    """Arguments of log_fold_run as a fold job would pass them."""
    kwargs = dict(
        study="main",
        dataset="MQ2008",
        featureset="all",
        method="lambdamart",
        fold=fold,
        params={"learning_rate": 0.05, "model": {"num_leaves": 31, "objective": "lambdarank"}},
        metrics={"test.ndcg@10": 0.40 + fold / 100, "test.map": 0.30},
        history=[{"step": step, "train.loss": 1.0 / (step + 1), "valid.ndcg@10": 0.1 * step}
                 for step in range(5)],
        artifacts=[],
        tags={"git.commit": "abc123"},
    )
    kwargs.update(overrides)
    return kwargs


def live_runs(client: MlflowClient, level: str) -> list:
    experiment = client.get_experiment_by_name(EXPERIMENT)
    return client.search_runs([experiment.experiment_id], f"tags.`rankstudy.level` = '{level}'")


# ---------------------------------------------------------------- pure helpers


def test_metric_names_keep_k_where_a_narrow_column_shows_it():
    """MLflow refuses '@' in names; `test.ndcg_at_10` showed as `test.ndcg_at_` in the runs
    table's columns (which k?): the k follows the metric's name at once."""
    assert mlflow_key("test.ndcg@10") == "test.ndcg10"
    assert mlflow_key("test.ndcg@3") == "test.ndcg3" != mlflow_key("test.ndcg@10")
    assert len(mlflow_key("test.ndcg@10")) <= len("test.ndcg_at_")  # as much as the column showed
    assert mlflow_key("valid/err@5 k:1") == "valid/err5 k:1"  # allowed chars kept
    assert mlflow_key("p(10)") == "p_10_"


def test_resolve_tracking_uri_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    default = resolve_tracking_uri(None, tmp_path / "results")
    assert default == f"sqlite:///{(tmp_path / 'results').resolve()}/mlflow.db"
    assert default.startswith("sqlite:////")  # absolute path
    assert resolve_tracking_uri("", tmp_path) == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    assert resolve_tracking_uri("http://127.0.0.1:5000", tmp_path) == "http://127.0.0.1:5000"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////elsewhere/m.db")
    assert resolve_tracking_uri("http://127.0.0.1:5000", tmp_path) == "sqlite:////elsewhere/m.db"


def test_sqlite_lock_excludes_other_processes(fresh_uri, tmp_path):
    lock_file = tmp_path / "results" / "mlflow.db.lock"
    probe = (
        "import fcntl, sys\n"
        "f = open(sys.argv[1], 'a')\n"
        "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n"
        "    sys.exit(3)\n"
    )
    with tracking_lock(fresh_uri):
        with tracking_lock(fresh_uri):  # re-entrant in one thread
            assert lock_file.exists()
            held = subprocess.run([sys.executable, "-c", probe, str(lock_file)], timeout=30)
    free = subprocess.run([sys.executable, "-c", probe, str(lock_file)], timeout=30)
    assert (held.returncode, free.returncode) == (3, 0)


def test_server_lock_is_a_no_op(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with tracking_lock("http://127.0.0.1:5000"):
        pass
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- sqlite store


def test_fold_run_logs_parent_and_child(fresh_uri, artifacts, tmp_path):
    run_id = log_fold_run(fresh_uri, EXPERIMENT, **fold_kwargs(1, artifacts=artifacts))
    client = MlflowClient(fresh_uri)

    [parent] = live_runs(client, "parent")
    assert parent.data.tags["rankstudy.key"] == PARENT_KEY
    assert parent.info.run_name == "main: lambdamart [all] MQ2008"  # the study first: names are cut at the end

    child = client.get_run(run_id)
    tags = child.data.tags
    assert tags["rankstudy.key"] == f"{PARENT_KEY}/fold1"
    assert tags["rankstudy.level"] == "fold"
    assert tags["mlflow.parentRunId"] == parent.info.run_id
    assert (tags["dataset"], tags["featureset"], tags["method"], tags["fold"]) == (
        "MQ2008", "all", "lambdamart", "1")
    assert tags["git.commit"] == "abc123"
    assert child.info.status == "FINISHED"

    assert child.data.params == {"learning_rate": "0.05", "model.num_leaves": "31",
                                 "model.objective": "lambdarank"}
    assert child.info.run_name == "main: lambdamart [all] MQ2008 fold1"
    assert child.data.metrics["test.ndcg10"] == pytest.approx(0.41)
    assert child.data.metrics["test.map"] == pytest.approx(0.30)
    history = client.get_metric_history(run_id, "valid.ndcg10")
    assert [m.step for m in history] == list(range(5))
    assert [m.value for m in history] == pytest.approx([0.1 * s for s in range(5)])
    assert len(client.get_metric_history(run_id, "train.loss")) == 5

    listed = sorted(item.path for item in client.list_artifacts(run_id))
    assert listed == ["model.txt", "scores.tsv"]
    # Artifacts sit next to the database, not in ./mlruns of the cwd.
    stored = tmp_path / "results" / "mlartifacts" / run_id / "artifacts" / "scores.tsv"
    assert stored.read_text() == artifacts[0].read_text()


def rows_of_run(uri: str, run_id: str) -> dict[str, int]:
    """How many rows of each table name the run: 0 everywhere once it is purged."""
    with sqlite3.connect(sqlite_path(uri)) as con:
        return {table: con.execute(f"SELECT count(*) FROM {table} WHERE run_uuid = ?", (run_id,)).fetchone()[0]
                for table in ("runs", "params", "metrics", "latest_metrics", "tags")}


def test_rerunning_a_fold_replaces_its_run(sqlite_uri, artifacts, tmp_path):
    first = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, artifacts=artifacts))
    other = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(2))
    store = tmp_path / "results" / "mlartifacts"
    assert (store / first / "artifacts" / "scores.tsv").exists()
    assert rows_of_run(sqlite_uri, first)["metrics"] > 0
    second = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, artifacts=artifacts))

    table = fold_runs(sqlite_uri, EXPERIMENT)
    assert sorted(table["run_id"]) == sorted([second, other])
    assert table.groupby("fold").size().to_dict() == {1: 1, 2: 1}
    assert table["parent_run_id"].nunique() == 1
    assert "metrics.test.ndcg10" in table.columns

    client = MlflowClient(sqlite_uri)
    assert len(live_runs(client, "parent")) == 1
    # the replaced run is purged, not only marked deleted: no row, no artifact folder left
    with pytest.raises(MlflowException, match="not found"):
        client.get_run(first)
    assert set(rows_of_run(sqlite_uri, first).values()) == {0}
    assert not (store / first).exists()
    assert (store / second / "artifacts" / "scores.tsv").exists()
    deleted = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id], "",
                                 run_view_type=ViewType.DELETED_ONLY)
    assert deleted == []


def test_failed_rerun_keeps_the_earlier_run(sqlite_uri, tmp_path):
    first = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1))
    with pytest.raises(FileNotFoundError):
        log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, artifacts=[tmp_path / "nope"]))
    # A param key over MLflow's 250-character limit fails inside MLflow, after the
    # new run was created: that half-logged run must not replace the complete one.
    with pytest.raises(MlflowException):
        log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, params={"x" * 300: 1}))
    assert list(fold_runs(sqlite_uri, EXPERIMENT)["run_id"]) == [first]
    client = MlflowClient(sqlite_uri)
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    assert client.search_runs([experiment_id], "", run_view_type=ViewType.DELETED_ONLY) == []  # purged


def test_mlflow_gc_purges_in_this_process_and_puts_the_tracking_uri_back(sqlite_uri):
    """MLflow's own gc, run by its click command here (no process whose command line would show a
    database password): a soft-deleted run is purged from the store, the tracking URI the command
    sets is put back, and a failure is a message, not an exception."""
    import mlflow

    client = MlflowClient(sqlite_uri)
    run_id = client.create_run(client.create_experiment(EXPERIMENT)).info.run_id
    client.delete_run(run_id)
    before = (mlflow.get_tracking_uri(), os.environ.get("MLFLOW_TRACKING_URI"))
    assert before[0] != sqlite_uri
    assert mlflow_gc(sqlite_uri, sqlite_uri, [run_id]) is None
    with pytest.raises(MlflowException, match="not found"):
        client.get_run(run_id)
    # a process started from here would log where it did before (the variable unset stays unset)
    assert (mlflow.get_tracking_uri(), os.environ.get("MLFLOW_TRACKING_URI")) == before
    assert "no-such-run" in mlflow_gc(sqlite_uri, sqlite_uri, ["no-such-run"])
    assert (mlflow.get_tracking_uri(), os.environ.get("MLFLOW_TRACKING_URI")) == before


def test_a_run_left_half_logged_by_a_killed_job_is_replaced_on_the_next_run(sqlite_uri):
    """kill -9 (or a full disk) mid-log leaves this training's new run RUNNING with part of its
    payload; the next logging of the same training (same uid) must not keep it as complete."""
    first = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, uid="old"))
    client = MlflowClient(sqlite_uri)
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    parent = live_runs(client, "parent")[0].info.run_id
    key = f"{PARENT_KEY}/fold1"
    left = client.create_run(experiment_id, tags={
        "rankstudy.key": key, "rankstudy.level": "fold", "rankstudy.uid": "new", "mlflow.parentRunId": parent,
        "rankstudy.logged": f"{int(time.time() * 1000)}.killed"}).info.run_id  # RUNNING, no metrics
    delete(client, first, [])  # and a replaced run a killed call deleted but could not purge
    by_hand = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(2, uid="x"))
    client.delete_run(by_hand)  # a run deleted in the UI stays for mlflow gc
    now = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, uid="new"))
    assert now not in (first, left)
    table = fold_runs(sqlite_uri, EXPERIMENT)
    assert list(table["run_id"]) == [now] and list(table["status"]) == ["FINISHED"]
    assert table["metrics.test.ndcg10"].tolist() == [pytest.approx(0.41)]
    deleted = client.search_runs([experiment_id], "", run_view_type=ViewType.DELETED_ONLY)
    assert [run.info.run_id for run in deleted] == [by_hand]  # the half-logged and the replaced run purged


def test_two_clients_deleting_one_run_at_once_both_succeed(sqlite_uri):
    """Two clients settling the same duplicate tag it at the same moment; PostgreSQL refuses the
    second insert of the tag as a duplicate key (seen in CI). The loser must go on deleting."""
    run_id = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1))

    class Racing(MlflowClient):
        def set_tag(self, run_id, key, value, **kwargs):
            super().set_tag(run_id, key, value, **kwargs)  # the other client's insert wins
            raise MlflowException("duplicate key value violates unique constraint \"tag_pk\"")

    deleted: list[str] = []
    delete(Racing(sqlite_uri), run_id, deleted)
    assert deleted == [run_id]
    assert MlflowClient(sqlite_uri).get_run(run_id).info.lifecycle_stage == "deleted"


def test_a_tag_that_fails_for_another_reason_still_raises(sqlite_uri):
    run_id = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1))

    class Broken(MlflowClient):
        def set_tag(self, run_id, key, value, **kwargs):
            raise MlflowException("the store is read-only")

    with pytest.raises(MlflowException, match="read-only"):
        delete(Broken(sqlite_uri), run_id, [])
    assert MlflowClient(sqlite_uri).get_run(run_id).info.lifecycle_stage == "active"


def test_parent_metrics_latest_call_wins(sqlite_uri, artifacts):
    child = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1))
    keys = dict(study="main", dataset="MQ2008", featureset="all", method="lambdamart")
    log_parent_metrics(sqlite_uri, EXPERIMENT, **keys, metrics={"test.ndcg@10": 0.40})
    parent_id = log_parent_metrics(sqlite_uri, EXPERIMENT, **keys,
                                   metrics={"test.ndcg@10": 0.45}, artifacts=artifacts[:1])

    client = MlflowClient(sqlite_uri)
    assert client.get_run(child).data.tags["mlflow.parentRunId"] == parent_id
    parent = client.get_run(parent_id)
    assert parent.data.metrics["test.ndcg10"] == pytest.approx(0.45)
    assert [m.step for m in client.get_metric_history(parent_id, "test.ndcg10")] == [0, 1]
    assert [item.path for item in client.list_artifacts(parent_id)] == ["scores.tsv"]

    # A parent with no folds yet is created on demand.
    lone = log_parent_metrics(sqlite_uri, EXPERIMENT, study="main", dataset="MQ2008", featureset="all",
                              method="ranknet", metrics={"test.map": 0.2})
    assert client.get_run(lone).data.tags["rankstudy.key"] == "main/MQ2008/all/ranknet"


def test_a_method_logged_again_unchanged_writes_no_new_parent_revision(sqlite_uri):
    """The tables job logs every method of its data set each time it runs: a method whose runs
    did not change keeps its run ids and its parent's metric history; a changed mean adds a step."""
    keys = dict(study="main", dataset="MQ2008", featureset="all", method="lambdamart")
    folds = [{k: v for k, v in fold_kwargs(f, uid=f"u{f}").items() if k not in keys} for f in (1, 2)]
    settings = {"kind": "lambdamart", "method": {"n_estimators": 30}}
    parent = {"metrics": {"test.ndcg@10": 0.415, "std.test.ndcg@10": float("nan")}, "params": settings,
              "tags": {"folds": "1,2"}}
    first = log_method(sqlite_uri, EXPERIMENT, keys, folds, parent)
    assert log_method(sqlite_uri, EXPERIMENT, keys, folds, parent) == first
    client = MlflowClient(sqlite_uri)
    parent_id, fold_ids = first
    assert [m.step for m in client.get_metric_history(parent_id, "test.ndcg10")] == [0]
    run = client.get_run(parent_id)
    assert run.data.tags["method.n_estimators"] == "30" and run.data.tags["folds"] == "1,2"
    assert {client.get_run(i).data.tags["mlflow.parentRunId"] for i in fold_ids.values()} == {parent_id}
    log_method(sqlite_uri, EXPERIMENT, keys, folds, {**parent, "metrics": {"test.ndcg@10": 0.42}})
    assert [m.step for m in client.get_metric_history(parent_id, "test.ndcg10")] == [0, 1]


def test_parent_params_are_the_settings_and_new_settings_replace_the_parent(sqlite_uri):
    keys = dict(study="main", dataset="MQ2008", featureset="all", method="lambdamart")
    settings = {"kind": "lambdamart", "method": {"n_estimators": 30}, "grid": {"num_leaves": [7, 15]}}
    first = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1))
    parent_id = log_parent_metrics(sqlite_uri, EXPERIMENT, **keys, metrics={"test.map": 0.3}, params=settings)
    client = MlflowClient(sqlite_uri)
    flat = {"kind": "lambdamart", "method.n_estimators": "30", "grid.num_leaves": "[7, 15]"}
    assert client.get_run(parent_id).data.params == flat
    # the same settings again: the same parent, its metric history goes on
    assert log_parent_metrics(sqlite_uri, EXPERIMENT, **keys, metrics={"test.map": 0.4}, params=settings) == parent_id
    assert [m.step for m in client.get_metric_history(parent_id, "test.map")] == [0, 1]

    # new settings: MLflow cannot change a param, so a new parent holds them and the old one's
    # children, and the old parent is gone from the store
    second = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(2))
    changed = {**settings, "method": {"n_estimators": 60}}
    new_id = log_parent_metrics(sqlite_uri, EXPERIMENT, **keys, metrics={"test.map": 0.5}, params=changed)
    assert new_id != parent_id
    assert client.get_run(new_id).data.params == {**flat, "method.n_estimators": "60"}
    assert [m.value for m in client.get_metric_history(new_id, "test.map")] == [0.5]
    assert [run.info.run_id for run in live_runs(client, "parent")] == [new_id]
    assert {client.get_run(run).data.tags["mlflow.parentRunId"] for run in (first, second)} == {new_id}
    with pytest.raises(MlflowException):
        client.get_run(parent_id)  # purged, not only deleted
    # a call without params (an older caller) leaves the parent and its params alone
    assert log_parent_metrics(sqlite_uri, EXPERIMENT, **keys, metrics={"test.map": 0.6}) == new_id


def test_study_run_is_replaced_on_rerun(sqlite_uri, artifacts):
    first = log_study_run(sqlite_uri, EXPERIMENT, study="main", dataset="MQ2008",
                          artifacts=artifacts, params={"methods": ["a", "b"]})
    second = log_study_run(sqlite_uri, EXPERIMENT, study="main", dataset="MQ2008",
                           artifacts=artifacts[:1])
    client = MlflowClient(sqlite_uri)
    [live] = live_runs(client, "study")
    assert live.info.run_id == second != first
    assert live.data.tags["rankstudy.key"] == "study/main/MQ2008"
    assert [item.path for item in client.list_artifacts(second)] == ["scores.tsv"]
    assert set(rows_of_run(sqlite_uri, first).values()) == {0}  # purged


def move_results(tmp_path: Path) -> tuple[Path, str]:
    """Move the results folder (database and artifacts) elsewhere, as a user moving a project."""
    shutil.move(tmp_path / "results", tmp_path / "moved")
    db = tmp_path / "moved" / "mlflow.db"
    return db, f"sqlite:///{db}"


def artifact_text(uri: str, run_id: str, name: str, dst: Path) -> str:
    dst.mkdir(exist_ok=True)
    return Path(MlflowClient(uri).download_artifacts(run_id, name, str(dst))).read_text()


def experiment_locations(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as con:
        return dict(con.execute("SELECT name, artifact_location FROM experiments"))


def test_a_moved_sqlite_store_finds_its_artifacts_after_the_ui_repairs_it(sqlite_uri, artifacts, tmp_path):
    run_id = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, artifacts=artifacts))
    db, uri = move_results(tmp_path)
    others = {k: v for k, v in experiment_locations(db).items() if k != EXPERIMENT}
    with pytest.raises(Exception):  # the links name the old folder
        artifact_text(uri, run_id, "scores.tsv", tmp_path / "before")

    spec = importlib.util.spec_from_file_location("bootstrap", REPO / "setup" / "bootstrap.py")
    bootstrap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bootstrap)
    command = bootstrap.ui_command(["--port", "5001"], db=db)  # what `bootstrap.py ui` starts, after its repair

    assert command[-4:] == ["--backend-store-uri", uri, "--port", "5001"]
    assert artifact_text(uri, run_id, "scores.tsv", tmp_path / "after") == artifacts[0].read_text()
    client = MlflowClient(uri)
    assert client.get_run(run_id).info.artifact_uri == (tmp_path / "moved" / "mlartifacts" / run_id / "artifacts").as_uri()
    assert experiment_locations(db) == {**others, EXPERIMENT: (tmp_path / "moved" / "mlartifacts").as_uri()}
    assert not (tmp_path / "results").exists()


def test_the_documented_command_repairs_a_copied_store_and_leaves_the_original_alone(sqlite_uri, artifacts, tmp_path):
    run_id = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, artifacts=artifacts))
    shutil.copytree(tmp_path / "results", tmp_path / "copy")
    (tmp_path / "copy" / "mlartifacts" / run_id / "artifacts" / "scores.tsv").write_text("the copy's\n")
    db = tmp_path / "copy" / "mlflow.db"
    done = subprocess.run([sys.executable, "-m", "rankstudy.tracking.relocate", str(db)],
                          capture_output=True, text=True, check=True)
    assert "mlartifacts ->" in done.stdout
    assert artifact_text(f"sqlite:///{db}", run_id, "scores.tsv", tmp_path / "a") == "the copy's\n"
    assert artifact_text(sqlite_uri, run_id, "scores.tsv", tmp_path / "b") == artifacts[0].read_text()
    again = subprocess.run([sys.executable, "-m", "rankstudy.tracking.relocate", str(db)],
                           capture_output=True, text=True, check=True)
    assert again.stdout == ""  # nothing moved since


def test_the_next_logging_job_after_a_move_logs_beside_the_moved_store(sqlite_uri, artifacts, tmp_path):
    first = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, artifacts=artifacts))
    db, uri = move_results(tmp_path)
    second = log_fold_run(uri, EXPERIMENT, **fold_kwargs(2, artifacts=artifacts))
    assert not (tmp_path / "results").exists()  # nothing written to the old folder
    assert (tmp_path / "moved" / "mlartifacts" / second / "artifacts" / "scores.tsv").exists()
    assert artifact_text(uri, first, "model.txt", tmp_path / "dl") == "tree\n"


def test_a_store_copied_without_its_artifacts_keeps_its_links(sqlite_uri, artifacts, tmp_path):
    run_id = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, artifacts=artifacts))
    (tmp_path / "alone").mkdir()
    shutil.copyfile(tmp_path / "results" / "mlflow.db", tmp_path / "alone" / "mlflow.db")
    assert relocate_artifacts(tmp_path / "alone" / "mlflow.db") == []
    assert artifact_text(f"sqlite:///{tmp_path / 'alone' / 'mlflow.db'}", run_id, "scores.tsv",
                         tmp_path / "dl") == artifacts[0].read_text()


def test_fold_runs_of_a_missing_experiment_is_empty(sqlite_uri):
    table = fold_runs(sqlite_uri, "never-logged")
    assert table.empty and list(table.columns) == FOLD_RUN_COLUMNS


def test_parallel_jobs_on_a_fresh_store_lose_nothing(fresh_uri):
    """8 separate processes, like `snakemake --cores 8`, log folds into a store that
    does not exist yet (the first one to get in creates the schema).

    The 'forkserver' context gives each worker a fresh process forked from a clean
    server that has only imported rankstudy.tracking and MLflow's SQL store: no state
    inherited from this test process, and not 8 x 2-4 s of CPU re-importing mlflow on
    a 2-core machine.
    Without a barrier they still collide, as no worker has anything else to do.
    """
    n = 8
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["rankstudy.tracking", "mlflow.store.tracking.sqlalchemy_store"])
    workers = []
    for fold in range(n):
        method = "lambdamart" if fold % 2 else "ranknet"
        kwargs = fold_kwargs(fold, method=method, artifacts=[])
        workers.append(context.Process(target=log_fold_run, args=(fresh_uri, EXPERIMENT),
                                       kwargs=kwargs))
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0] * n

    table = fold_runs(fresh_uri, EXPERIMENT)
    assert sorted(table["fold"]) == list(range(n))
    assert table.groupby("method")["parent_run_id"].nunique().to_dict() == {
        "lambdamart": 1, "ranknet": 1}
    client = MlflowClient(fresh_uri)
    parents = live_runs(client, "parent")
    assert sorted(run.data.tags["rankstudy.key"] for run in parents) == [
        "main/MQ2008/all/lambdamart", "main/MQ2008/all/ranknet"]
    assert set(table["parent_run_id"]) == {run.info.run_id for run in parents}


# ---------------------------------------------------------------- tracking server


@pytest.fixture
def mlflow_server(tmp_path: Path):
    """A real `mlflow server` on 127.0.0.1 with its own SQLite store and artifact folder."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_file = open(tmp_path / "server.log", "w")
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true",
           # The background job runner is not needed and costs a process and startup time.
           "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    command = [
        sys.executable, "-m", "mlflow", "server",
        "--backend-store-uri", f"sqlite:///{tmp_path / 'server.db'}",
        "--artifacts-destination", str(tmp_path / "server-artifacts"),
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        # MLflow 3 checks the Host header (DNS-rebinding protection); name ours explicitly.
        "--allowed-hosts", f"127.0.0.1:{port},localhost:{port}",
    ]
    # Own session, so teardown can stop the server and its uvicorn worker together.
    server = subprocess.Popen(command, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                              cwd=tmp_path, start_new_session=True)
    try:
        wait_for_health(url, server, timeout=75)
        yield url
    except Exception:
        print((tmp_path / "server.log").read_text()[-3000:])
        raise
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=15)
        log_file.close()


def test_logging_to_a_tracking_server(mlflow_server, artifacts, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    uri = resolve_tracking_uri("sqlite:////not/used.db", "results")
    assert uri == mlflow_server

    log_fold_run(uri, EXPERIMENT, **fold_kwargs(0))
    child_id = log_fold_run(uri, EXPERIMENT, **fold_kwargs(0, artifacts=artifacts))  # rerun
    log_fold_run(uri, EXPERIMENT, **fold_kwargs(1))

    experiment = rest(mlflow_server, f"experiments/get-by-name?experiment_name={EXPERIMENT}")
    experiment_id = experiment["experiment"]["experiment_id"]
    found = rest(mlflow_server, "runs/search", {
        "experiment_ids": [experiment_id],
        "filter": f"tags.`rankstudy.key` = '{PARENT_KEY}/fold0'",
        "run_view_type": "ACTIVE_ONLY",
    })
    [child] = found["runs"]
    assert child["info"]["run_id"] == child_id
    metrics = {m["key"]: m["value"] for m in child["data"]["metrics"]}
    assert metrics["test.ndcg10"] == pytest.approx(0.40)
    tags = {t["key"]: t["value"] for t in child["data"]["tags"]}
    assert tags["rankstudy.level"] == "fold"

    everything = rest(mlflow_server, "runs/search", {"experiment_ids": [experiment_id]})
    levels = sorted(
        next(t["value"] for t in run["data"]["tags"] if t["key"] == "rankstudy.level")
        for run in everything["runs"])
    assert levels == ["fold", "fold", "parent"]

    listed = rest(mlflow_server, f"artifacts/list?run_id={child_id}")
    assert sorted(f["path"] for f in listed["files"]) == ["model.txt", "scores.tsv"]


def test_a_server_purges_replaced_runs_through_its_backend_store(mlflow_server, artifacts, tmp_path, monkeypatch):
    """With the server's database named in RANKSTUDY_MLFLOW_BACKEND_STORE_URI, a replaced run's
    rows go from that database and its artifacts through the server (mlflow-artifacts:)."""
    monkeypatch.setenv(BACKEND_ENV, f"sqlite:///{tmp_path / 'server.db'}")
    first = log_fold_run(mlflow_server, EXPERIMENT, **fold_kwargs(0, artifacts=artifacts))
    client = MlflowClient(mlflow_server)
    location = client.get_run(first).info.artifact_uri
    assert location.startswith("mlflow-artifacts:/") and location.endswith(f"/{first}/artifacts")
    folder = tmp_path / "server-artifacts" / location.removeprefix("mlflow-artifacts:/").removesuffix("/artifacts")
    assert (folder / "artifacts" / "scores.tsv").exists()

    second = log_fold_run(mlflow_server, EXPERIMENT, **fold_kwargs(0, artifacts=artifacts))
    assert second != first
    with pytest.raises(MlflowException, match="not found"):
        client.get_run(first)
    # mlflow gc empties the run's artifacts through the server (an empty folder may stay there)
    assert not folder.exists() or not any(path.is_file() for path in folder.rglob("*"))
    assert [item.path for item in client.list_artifacts(second)] == ["model.txt", "scores.tsv"]


@pytest.mark.parametrize("from_env, local", [(True, "unset MLFLOW_TRACKING_URI"),
                                              (False, "set config key mlflow.tracking_uri to null")])
def test_a_stopped_server_fails_within_half_a_minute_saying_how_to_start_it(tmp_path, monkeypatch, from_env, local):
    import time as clock

    from rankstudy.tracking.errors import TrackingUnavailable

    if from_env:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")
    else:
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    started = clock.monotonic()
    with pytest.raises(TrackingUnavailable, match=r"http://127.0.0.1:9 does not answer.*mlflow-server.sh start\)\" "
                                                  r"\(or " + local):
        log_fold_run("http://127.0.0.1:9", EXPERIMENT, **fold_kwargs(0))
    assert clock.monotonic() - started < 30


def test_a_server_is_checked_before_any_job(tmp_path, monkeypatch):
    """A stopped server used to fail the run at its first aggregate job, after all training; the
    run now fails at its start, saying how to start the server, and no job runs."""
    from http.server import BaseHTTPRequestHandler

    from loopback import serving
    from pipeline_runs import SNAKEMAKE, TINY, make_workdir

    from rankstudy.tracking.errors import TrackingUnavailable, check_server_answers

    class NotFound(BaseHTTPRequestHandler):  # any answer counts, also an error status
        def do_GET(self):
            self.send_error(404)

        def log_message(self, *args):
            pass

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with serving(NotFound) as srv:
        check_server_answers(srv.url(""))
    check_server_answers(f"sqlite:///{tmp_path}/none.db")  # not a server: nothing to check
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(TrackingUnavailable, match="does not answer.*mlflow-server.sh start"):
        check_server_answers(dead)

    workdir = make_workdir(tmp_path, {**TINY, "folds": [1], "mlflow": {"tracking_uri": dead}})
    started = time.monotonic()
    out = subprocess.run([SNAKEMAKE, "--cores", "1", "--configfile", "test.yaml", "--replace-workflow-config"],
                         cwd=workdir, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and time.monotonic() - started < 60
    assert f"the MLflow tracking server {dead} does not answer" in out.stderr
    assert "set config key mlflow.tracking_uri to null" in out.stderr
    assert not (workdir / "results" / "data").exists()  # no job ran


def test_an_experiment_made_without_its_kind_gets_the_model_training_kind(tmp_path):
    """MLflow 3's UI reads the experiment tag mlflow.experimentKind: without it, an experiment with
    no GenAI traces may still open on the GenAI pages. A store made before rankstudy set the tag
    gets it the next time a job looks the experiment up."""
    from rankstudy.tracking.store import EXPERIMENT_KIND, EXPERIMENT_KIND_TAG, experiment_id

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(tracking_uri=uri)
    made = client.create_experiment("old", artifact_location=str(tmp_path / "mlartifacts"))
    assert EXPERIMENT_KIND_TAG not in client.get_experiment(made).tags
    assert experiment_id(client, uri, "old") == made
    assert client.get_experiment(made).tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND


def load_bootstrap():
    spec = importlib.util.spec_from_file_location("bootstrap", REPO / "setup" / "bootstrap.py")
    bootstrap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bootstrap)
    return bootstrap


def test_each_study_has_a_saved_view_of_its_runs_and_the_ui_prints_its_address(sqlite_uri):
    """Every study logs to one experiment: the saved view followed whichever study ran last. Each
    study now has its own view (its runs by the study tag, its metrics as columns)."""
    from rankstudy.tracking.views import LEGACY_VIEW_TAG, decode_view, save_runs_view, view_key, view_tag

    bootstrap = load_bootstrap()
    log_parent_metrics(sqlite_uri, EXPERIMENT, study="main", dataset="MQ2008", featureset="all",
                       method="ranknet", metrics={"test.map": 0.2})
    client = MlflowClient(sqlite_uri)
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    client.set_experiment_tag(experiment_id, LEGACY_VIEW_TAG, "{}")  # the one view of an older version
    db = sqlite_path(sqlite_uri)
    address = bootstrap.runs_url(db, "5000", EXPERIMENT)
    assert address.endswith("/runs?workflowType=machine_learning")
    assert save_runs_view(sqlite_uri, EXPERIMENT, ["test.ndcg@10", "test.map"], "main") == view_key("main")
    assert save_runs_view(sqlite_uri, EXPERIMENT, ["test.err"], "leaderboard") == view_key("leaderboard")
    tags = client.get_experiment_by_name(EXPERIMENT).tags
    assert LEGACY_VIEW_TAG not in tags
    main, board = decode_view(tags[view_tag("main")]), decode_view(tags[view_tag("leaderboard")])
    # the metrics under their MLflow names, as the UI names a metric column; each study's runs only
    assert main["selectedColumns"] == ["metrics.`test.ndcg10`", "metrics.`test.map`"]
    assert (main["searchFilter"], board["searchFilter"]) == ("tags.study = 'main'", "tags.study = 'leaderboard'")
    assert board["selectedColumns"] == ["metrics.`test.err`"]
    # run names and values wide enough to read (the UI applies widths to the columns columnOrder lists)
    assert main["columnOrder"] == ["attributes.`Run Name`", "metrics.`test.ndcg10`", "metrics.`test.map`"]
    assert main["columnWidths"]["attributes.`Run Name`"] >= 380 and main["columnWidths"]["metrics.`test.map`"] >= 130
    assert [r.info.run_name for r in client.search_runs([experiment_id], main["searchFilter"])] == [
        "main: ranknet [all] MQ2008"]  # the filter is one MLflow accepts
    save_runs_view(sqlite_uri, EXPERIMENT, ["test.ndcg@10", "test.map"], "main")
    assert client.get_experiment_by_name(EXPERIMENT).tags[view_tag("main")] == tags[view_tag("main")]  # not rewritten
    assert bootstrap.study_views(db, EXPERIMENT) == (experiment_id, {"leaderboard": view_key("leaderboard"),
                                                                     "main": view_key("main")})
    assert bootstrap.runs_url(db, "5000", EXPERIMENT, study="main") == f"{address}&viewStateShareKey={view_key('main')}"


def test_a_fold_run_page_opens_on_its_training_curves(sqlite_uri):
    """MLflow's run page lists `system/` metrics first, then the others in the order the store returns
    them (the order they were first logged): the curves come first, then the test metrics."""
    run_id = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, metrics={
        "random.test.map": 0.1, "test.ndcg@10": 0.41, "test.map": 0.3, "vali.map": 0.2}))
    names = list(MlflowClient(sqlite_uri).get_run(run_id).data.metrics)
    assert names == ["train.loss", "valid.ndcg10", "test.ndcg10", "test.map", "vali.map", "random.test.map"]


def test_a_fold_runs_usage_is_kept_out_of_its_metric_charts(sqlite_uri, tmp_path):
    """MLflow 3's run page charts every metric, the prefixed ones (`usage/train.wall_s`) in sections
    sorted before "Model metrics": the jobs' 15 timings came before the learning curves (issue
    45.5). The usage is tags and usage.json; the metrics with a history are the learning curves, and
    no metric name opens a section of its own."""
    history = [{"step": step, "objective": 1.0 / (step + 1), "vali_metric": 0.1 * step, "seconds": 0.5 + step,
                "argmax_seconds": 0.25} for step in range(4)]
    usage = {"train_seconds": 3.5, "fit_seconds": 1.25, "train.wall_s": 4.0, "train.cpu_s": 3.75,
             "train.max_rss_mb": 312.5, "evaluate.wall_s": 1.5}
    kwargs = fold_kwargs(1, history=history, usage=usage, uid="u1")
    run_id = log_fold_run(sqlite_uri, EXPERIMENT, **kwargs)
    client = MlflowClient(sqlite_uri)
    run = client.get_run(run_id)
    with_history = {name for name in run.data.metrics if len(client.get_metric_history(run_id, name)) > 1}
    assert with_history == {"objective", "vali_metric"}
    assert not [name for name in run.data.metrics if "/" in name]
    assert set(run.data.metrics) == {"objective", "vali_metric", "test.ndcg10", "test.map"}
    assert {k: float(v) for k, v in run.data.tags.items() if k.startswith("usage.")} == {
        f"usage.{k}": v for k, v in usage.items()}
    document = json.loads(Path(client.download_artifacts(run_id, "usage.json", str(tmp_path))).read_text())
    assert document == {"usage": usage, "steps": [{"step": s, "seconds": 0.5 + s, "argmax_seconds": 0.25}
                                                  for s in range(4)]}
    # the same training logged again with a job's figures changed (evaluate rerun): the run is kept,
    # its tags and usage.json updated
    again = log_fold_run(sqlite_uri, EXPERIMENT, **{**kwargs, "usage": {**usage, "evaluate.wall_s": 2.5}})
    assert again == run_id
    assert client.get_run(run_id).data.tags["usage.evaluate.wall_s"] == "2.5"
    document = json.loads(Path(client.download_artifacts(run_id, "usage.json", str(tmp_path / "b"))).read_text())
    assert document["usage"]["evaluate.wall_s"] == 2.5


def test_a_pruned_trial_is_a_nested_run_with_its_curve(sqlite_uri):
    """A tuning trial's validation curve while it trained is the history of its nested run's
    vali.curve; a pruned one's ends where the pruner stopped it (issue 43)."""
    from rankstudy.tracking.nested import nested_runs

    rows = [{"candidate": 1, "param.lr": 0.1, "vali.ndcg@10": 0.5, "fit_seconds": 1.0, "cpu_seconds": 1.0,
             "state": "complete", "selected": True, "worker": 0, "curve": "[[1, 0.3], [2, 0.4], [3, 0.5]]"},
            {"candidate": 2, "param.lr": 0.01, "vali.ndcg@10": float("nan"), "fit_seconds": 0.2, "cpu_seconds": 0.2,
             "state": "pruned", "selected": False, "worker": 0, "curve": "[[1, 0.1], [2, 0.12]]"}]
    run_id = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, uid="p", nested=nested_runs(rows, level="trial",
                                                                                               number="candidate")))
    client = MlflowClient(sqlite_uri)
    trials = {r.info.run_name.rsplit(" ", 1)[1]: r for r in live_runs(client, "trial")
              if r.data.tags["mlflow.parentRunId"] == run_id}
    assert trials["trial2"].data.tags["state"] == "pruned"
    history = client.get_metric_history(trials["trial2"].info.run_id, "vali.curve")
    assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == [(1, 0.1), (2, 0.12)]
    assert len(client.get_metric_history(trials["trial1"].info.run_id, "vali.curve")) == 3


def test_a_fold_s_candidates_are_runs_nested_under_it_and_replaced_with_it(sqlite_uri):
    from rankstudy.tracking.nested import nested_runs

    rows = [{"candidate": 1, "param.l2": 0.01, "vali.ndcg@10": 0.41, "fit_seconds": 1.5, "cpu_seconds": 1.4,
             "state": "complete", "selected": True},
            {"candidate": 2, "param.l2": 1.0, "vali.ndcg@10": float("nan"), "fit_seconds": 0.5, "cpu_seconds": 0.5,
             "state": "diverged", "selected": False}]
    client = MlflowClient(sqlite_uri)

    def nested_of(fold_run_id: str) -> dict:
        return {r.data.tags["rankstudy.key"].rsplit("/", 1)[1]: r for r in live_runs(client, "candidate")
                if r.data.tags["mlflow.parentRunId"] == fold_run_id}

    first = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, uid="a", nested=nested_runs(rows)))
    runs = nested_of(first)
    assert sorted(runs) == ["candidate1", "candidate2"]
    one, two = runs["candidate1"], runs["candidate2"]
    assert one.info.run_name == "main: lambdamart [all] MQ2008 fold1 candidate1"
    assert one.data.params == {"l2": "0.01"} and two.data.params == {"l2": "1.0"}
    assert one.data.metrics == {"vali.ndcg10": 0.41, "fit_seconds": 1.5, "cpu_seconds": 1.4}
    assert two.data.metrics["vali.ndcg10"] != two.data.metrics["vali.ndcg10"]  # NaN: it diverged
    assert (one.data.tags["state"], one.data.tags["selected"]) == ("complete", "true")
    assert (two.data.tags["state"], two.data.tags["selected"]) == ("diverged", "false")
    assert one.info.status == "FINISHED" and one.data.tags["study"] == "main"
    assert len(fold_runs(sqlite_uri, EXPERIMENT)) == 1  # nested runs are no fold runs

    # the same training logged again keeps them; one lost (a killed call) is logged again
    client.delete_run(two.info.run_id)
    assert log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, uid="a", nested=nested_runs(rows))) == first
    again = nested_of(first)
    assert again["candidate1"].info.run_id == one.info.run_id and sorted(again) == ["candidate1", "candidate2"]

    # a new training replaces the fold run, and its candidates go with the old run, purged
    second = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, uid="b", nested=nested_runs(rows[:1])))
    assert second != first and sorted(nested_of(second)) == ["candidate1"]
    assert [r.info.run_id for r in live_runs(client, "candidate")] == [nested_of(second)["candidate1"].info.run_id]
    for old in (one.info.run_id, again["candidate2"].info.run_id):
        assert set(rows_of_run(sqlite_uri, old).values()) == {0}


def gc_calls(monkeypatch) -> list[list[str]]:
    """The `mlflow gc` calls rankstudy makes from here on (each one's run ids)."""
    from rankstudy.tracking import store

    calls, gc = [], store.mlflow_gc

    def counted(backend, uri, run_ids):
        calls.append(list(run_ids))
        return gc(backend, uri, run_ids)

    monkeypatch.setattr(store, "mlflow_gc", counted)
    return calls


def test_relogging_a_study_after_every_fold_was_retrained_purges_once(sqlite_uri, artifacts, monkeypatch):
    """--forceall retrains every fold, and log_runs replaces every fold run: one `mlflow gc` (a
    Python start with MLflow's import) per replaced fold made that 462 s against 11.8 s the first
    time on the default study. In one purge_at_end block: one gc for the whole batch, and the store
    holds exactly what a run per fold would (one live run per fold and candidate, nothing left
    deleted)."""
    from rankstudy.tracking.nested import nested_runs
    from rankstudy.tracking.store import purge_at_end

    rows = [{"candidate": c, "param.l2": l2, "vali.ndcg@10": 0.4, "state": "complete", "selected": c == 1}
            for c, l2 in ((1, 0.01), (2, 1.0))]
    client = MlflowClient(sqlite_uri)
    experiment = lambda: client.get_experiment_by_name(EXPERIMENT).experiment_id  # noqa: E731

    def log_study(training: str) -> dict:
        ids = {}
        for method in ("ranknet", "lambdamart"):
            keys = dict(study="main", dataset="MQ2008", featureset="all", method=method)
            folds = [{k: v for k, v in fold_kwargs(f, uid=f"{training}{f}", artifacts=artifacts,
                                                   nested=nested_runs(rows)).items() if k not in keys}
                     for f in (1, 2, 3)]
            ids[method] = log_method(sqlite_uri, EXPERIMENT, keys, folds, {"metrics": {"test.ndcg@10": 0.4}})[1]
        ids["study"] = log_study_run(sqlite_uri, EXPERIMENT, study="main", dataset="MQ2008", artifacts=artifacts)
        return ids

    calls = gc_calls(monkeypatch)
    first = log_study("first")
    assert calls == []  # nothing replaced
    with purge_at_end():
        second = log_study("again")
        # meanwhile the replaced runs are deleted, out of sight: one live run per fold already
        assert fold_runs(sqlite_uri, EXPERIMENT).groupby(["method", "fold"]).size().tolist() == [1] * 6
        assert calls == []
    [purged] = calls  # one gc for 6 fold runs, their 12 candidates and the study run
    replaced = [*first["ranknet"].values(), *first["lambdamart"].values(), first["study"]]
    assert set(replaced) <= set(purged) and len(purged) == 6 + 12 + 1
    table = fold_runs(sqlite_uri, EXPERIMENT)
    assert sorted(table["run_id"]) == sorted([*second["ranknet"].values(), *second["lambdamart"].values()])
    assert len(live_runs(client, "candidate")) == 12 and len(live_runs(client, "study")) == 1
    assert client.search_runs([experiment()], "", run_view_type=ViewType.DELETED_ONLY) == []
    for old in replaced:
        assert set(rows_of_run(sqlite_uri, old).values()) == {0}
    # without the block, as before: a gc per replaced fold run
    log_study("third")
    assert len(calls) == 1 + 6 + 1


def test_a_batch_that_fails_still_purges_what_it_replaced(sqlite_uri, monkeypatch):
    from rankstudy.tracking.store import purge_at_end

    first = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, uid="a"))
    calls = gc_calls(monkeypatch)
    with pytest.raises(RuntimeError, match="disk full"):
        with purge_at_end():
            second = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1, uid="b"))
            raise RuntimeError("disk full")
    assert calls == [[first]]
    assert set(rows_of_run(sqlite_uri, first).values()) == {0}
    assert list(fold_runs(sqlite_uri, EXPERIMENT)["run_id"]) == [second]


HOLD_LOCK = ("import sqlite3, sys, time\n"
             "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
             "c.execute('BEGIN EXCLUSIVE')\n"
             "print('locked', flush=True)\n"
             "time.sleep(float(sys.argv[2]))\n")


def holding_the_store(uri: str, seconds: float) -> subprocess.Popen:
    """Another process holding an exclusive lock on the SQLite file (not rankstudy's flock)."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(sqlite_path(uri)), str(seconds)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_a_store_another_process_keeps_locked_fails_in_one_line_naming_it(sqlite_uri, monkeypatch):
    """A locked store ended the job with a 60-line OperationalError traceback; after a bounded
    retry it is one line naming the store."""
    from rankstudy.tracking.errors import StoreLocked

    log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1))  # the schema and experiment exist
    monkeypatch.setenv("RANKSTUDY_MLFLOW_LOCK_WAIT", "1")
    holder = holding_the_store(sqlite_uri, 600)
    try:
        started = time.monotonic()
        with pytest.raises(StoreLocked) as raised:
            log_method(sqlite_uri, EXPERIMENT, dict(study="main", dataset="MQ2008", featureset="all",
                                                    method="lambdamart"),
                       [{k: v for k, v in fold_kwargs(2).items() if k not in ("study", "dataset", "featureset",
                                                                              "method")}],
                       {"metrics": {"test.map": 0.3}})
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    message = str(raised.value)
    assert "\n" not in message and str(sqlite_path(sqlite_uri)) in message and "locked" in message, message
    assert waited < 30  # bounded: SQLite's 5 s busy wait and the retries within the 1 s asked for


def test_a_store_locked_for_a_while_is_logged_once_it_is_free(sqlite_uri, monkeypatch):
    """A lock held longer than SQLite's own busy wait (5 s), then released: the retry logs."""
    log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(1))
    monkeypatch.setenv("RANKSTUDY_MLFLOW_LOCK_WAIT", "60")
    holder = holding_the_store(sqlite_uri, 7)
    try:
        run_id = log_fold_run(sqlite_uri, EXPERIMENT, **fold_kwargs(2))
    finally:
        holder.kill()
        holder.wait()
    assert sorted(fold_runs(sqlite_uri, EXPERIMENT)["fold"]) == [1, 2] and run_id
