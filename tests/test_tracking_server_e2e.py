"""The pipeline logging to an MLflow tracking server on PostgreSQL (setup/cluster/mlflow-server.sh)
with 8 jobs at once: exactly one run per (dataset, feature set, method, fold) and one parent per
(dataset, feature set, method), none lost or duplicated, artifacts stored and served by the server
(`mlflow-artifacts:` URIs), and a rerun's replaced runs purged from the database and the artifact
store. Everything is checked through the server's REST API, as a client on another machine would.

Needs PostgreSQL's binaries (`mlflow-server.sh find-postgres`; Debian: apt-get install postgresql)
and psycopg2 (the `cluster` extra). Without them the tests are skipped, or fail when
RANKSTUDY_REQUIRE_SERVER=1 (CI installs PostgreSQL and sets it)."""

from __future__ import annotations

import multiprocessing
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from mlflow_rest import rest as mlflow_rest
from clusters import script, server  # noqa: F401 - the fixture
from pipeline_runs import SNAKEMAKE, git, make_workdir

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
EXPERIMENT = "rankstudy"
FOLDS = [1, 2]
METHODS = ["pointwise", "ranknet"]
FEATURESETS = ["first", "rho0.10"]  # first_order plus rho: [0.1]
# 2 cheap methods x 2 feature sets x 2 folds: 8 training jobs at once; 4 parents of 2 fold runs
# each, logged by the log_runs job (the pipeline logs a study and data set in one process; clients
# logging at once against the server: test_concurrent_clients_converge_on_one_parent_and_one_run_per_fold)
TINY = {
    "study": "server",
    "folds": FOLDS,
    "synthetic": {"n_queries": 60, "n_features": 17},
    "methods": {
        "pointwise": {"kind": "linear", "params": {"loss": "pointwise_mse", "max_iter": 50}, "grid": {"l2": [0.01]}},
        "ranknet": {"kind": "linear", "params": {"loss": "ranknet", "max_iter": 50}, "grid": {"l2": [0.01]}},
    },
    "features": {"normalization": "zscore", "first_order": True, "rho": [0.1]},
    "report": {"baseline": "ranknet", "metrics": ["ndcg@10", "map"], "n_resamples": 100},
}
JOBS = 8


def run_pipeline(workdir: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    cmd = [SNAKEMAKE, "--cores", str(JOBS), "--configfile", "test.yaml", "--replace-workflow-config", *args]
    out = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=1800, env={**os.environ, **env})
    if out.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{out.stdout[-5000:]}\n{out.stderr[-8000:]}")
    return out


def rest(url: str, endpoint: str, body: dict | None = None) -> dict:
    # a server busy with eight loggers may answer slowly
    return mlflow_rest(url, endpoint, body, timeout=60)


def search(url: str, experiment_id: str, filter_string: str = "", view: str = "ACTIVE_ONLY") -> list[dict]:
    runs, token = [], None
    while True:
        page = rest(url, "runs/search", {"experiment_ids": [experiment_id], "filter": filter_string,
                                         "run_view_type": view, "max_results": 1000,
                                         **({"page_token": token} if token else {})})
        runs.extend(page.get("runs", []))
        token = page.get("next_page_token")
        if not token:
            return runs


def tags(run: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def level(runs: list[dict], name: str) -> list[dict]:
    return [run for run in runs if tags(run).get("rankstudy.level") == name]


def download(url: str, run: dict, path: str) -> bytes:
    """An artifact through the server's artifact proxy (what `mlflow-artifacts:` URIs resolve to)."""
    location = run["info"]["artifact_uri"].removeprefix("mlflow-artifacts:")
    with urllib.request.urlopen(f"{url}/api/2.0/mlflow-artifacts/artifacts{location}/{path}", timeout=60) as response:
        return response.read()


@pytest.fixture(scope="module")
def pipeline(server, tmp_path_factory):
    env, state = server
    workdir = make_workdir(tmp_path_factory.mktemp("server"), TINY)
    git(workdir, "init", "-q")
    git(workdir, "add", ".")
    git(workdir, "commit", "-qm", "the user's clone")
    started = time.monotonic()
    out = run_pipeline(workdir, env)
    print(f"pipeline against the server: {time.monotonic() - started:.0f} s")
    url = env["MLFLOW_TRACKING_URI"]
    experiment_id = rest(url, f"experiments/get-by-name?experiment_name={EXPERIMENT}")["experiment"]["experiment_id"]
    return workdir, env, state, url, experiment_id, out


def expected_fold_keys() -> set[str]:
    # a fold run's key is its folder under results/runs/: {study}/{dataset}/{featureset}/{method}/fold{k}
    return {f"server/synthetic/{fs}/{m}/fold{k}" for fs in FEATURESETS for m in METHODS for k in FOLDS}


def check_one_run_per_key(url: str, experiment_id: str, workdir: Path) -> tuple[dict, dict]:
    """Exactly the runs the config implies, once each, children under their parents;
    returns {key: run} of the fold runs and of the parents."""
    runs = search(url, experiment_id)
    folds, parents = level(runs, "fold"), level(runs, "parent")
    fold_keys = Counter(tags(run)["rankstudy.key"] for run in folds)
    parent_keys = Counter(tags(run)["rankstudy.key"] for run in parents)
    assert {k: n for k, n in fold_keys.items() if n > 1} == {}, "duplicated fold runs"
    assert set(fold_keys) == expected_fold_keys(), "fold runs lost or unexpected"
    assert {k: n for k, n in parent_keys.items() if n > 1} == {}, "duplicated parents"
    assert set(parent_keys) == {f"server/synthetic/{fs}/{m}" for fs in FEATURESETS for m in METHODS}
    assert [tags(run)["rankstudy.key"] for run in level(runs, "study")] == ["study/server/synthetic"]
    by_key = {tags(run)["rankstudy.key"]: run for run in folds}
    parent_by_key = {tags(run)["rankstudy.key"]: run for run in parents}
    for key, run in by_key.items():
        parent = parent_by_key[key.rsplit("/", 1)[0]]
        assert tags(run)["mlflow.parentRunId"] == parent["info"]["run_id"], key
        assert run["info"]["status"] == "FINISHED"
        # its one grid candidate, nested under it (a replaced fold run's went with it)
        nested = [r for r in level(runs, "candidate") if tags(r)["mlflow.parentRunId"] == run["info"]["run_id"]]
        assert [tags(r)["rankstudy.key"] for r in nested] == [f"{key}/candidate1"], key
    assert len(level(runs, "candidate")) == len(by_key)
    logged = (workdir / "results/logs/log_runs/server/synthetic.log").read_text()
    for key, parent in parent_by_key.items():
        assert tags(parent)["folds"] == ",".join(map(str, FOLDS))
        # the run ids the log_runs job's log names are what the server holds
        method, featureset = key.split("/")[3], key.split("/")[2]
        said = re.search(rf"MLflow: {method} \[{featureset}\] parent run (\w+), fold runs (.*)", logged)
        assert said and said[1] == parent["info"]["run_id"], key
        assert {f"{key}/fold{k}": run_id for k, run_id in re.findall(r"(\d+): (\w+)", said[2])} == {
            k: run["info"]["run_id"] for k, run in by_key.items() if k.startswith(f"{key}/")}
    # nothing soft-deleted left behind: a first run deletes nothing, a rerun purges what it deletes
    assert search(url, experiment_id, view="DELETED_ONLY") == []
    return by_key, parent_by_key


def test_one_run_per_fold_and_method_with_parents(pipeline):
    workdir, _, _, url, experiment_id, _ = pipeline
    check_one_run_per_key(url, experiment_id, workdir)


def test_artifacts_are_served_by_the_server(pipeline):
    workdir, _, state, url, experiment_id, _ = pipeline
    runs = level(search(url, experiment_id), "fold") + level(search(url, experiment_id), "study")
    for run in runs:
        assert run["info"]["artifact_uri"].startswith("mlflow-artifacts:/"), run["info"]["artifact_uri"]
        key = tags(run)["rankstudy.key"]
        if key.startswith("study/"):
            continue
        served = download(url, run, "model.json")
        assert served == (workdir / f"results/runs/{key}/model.json").read_bytes(), key
    # where the server keeps them: its --artifacts-destination, not the jobs' results folder
    run = runs[0]
    stored = state / "artifacts" / run["info"]["artifact_uri"].removeprefix("mlflow-artifacts:/")
    assert {"model.json", "scores.test.tsv", "config.resolved.json"} <= {p.name for p in stored.iterdir()}


class CommandLines(threading.Thread):
    """Every process's command line (/proc/<pid>/cmdline, readable by every user), read again and
    again while it runs: those holding ``secret``, and how many `mlflow gc` ones were seen."""

    def __init__(self, secret: str):
        super().__init__(daemon=True)
        self.secret, self.leaks, self.gc_seen, self.done = secret.encode(), set(), 0, threading.Event()

    def run(self):
        while not self.done.is_set():
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if self.secret in cmdline:
                    self.leaks.add(cmdline.replace(b"\0", b" ").decode(errors="replace")[:200])
                # the script's `mlflow gc` (the pipeline's runs in its log_runs job: rankstudy.tracking.store.mlflow_gc)
                if b"\0mlflow\0gc\0" in cmdline:
                    self.gc_seen += 1
            time.sleep(0.01)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join()


def test_a_rerun_purges_the_runs_it_replaces(pipeline):
    workdir, env, state, url, experiment_id, _ = pipeline
    before, _ = check_one_run_per_key(url, experiment_id, workdir)
    study_before = level(search(url, experiment_id), "study")[0]["info"]["run_id"]
    key = "server/synthetic/first/ranknet/fold2"
    old = before[key]
    old_folder = state / "artifacts" / old["info"]["artifact_uri"].removeprefix("mlflow-artifacts:/").removesuffix(
        "/artifacts")
    assert old_folder.is_dir()
    # the database's password is on no process's command line while the rerun purges
    password = urllib.parse.urlsplit(env["RANKSTUDY_MLFLOW_BACKEND_STORE_URI"]).password
    assert password
    with CommandLines(password) as seen:
        run_pipeline(workdir, env, "--forcerun", f"results/runs/{key}/model.json")
    assert not seen.leaks, seen.leaks

    after, _ = check_one_run_per_key(url, experiment_id, workdir)
    assert after[key]["info"]["run_id"] != old["info"]["run_id"]
    assert {k: r["info"]["run_id"] for k, r in after.items() if k != key} == {
        k: r["info"]["run_id"] for k, r in before.items() if k != key}
    # the replaced fold run and study run are gone from PostgreSQL, not only marked deleted,
    # and the fold run's artifacts from the server's artifact store
    for run_id in (old["info"]["run_id"], study_before):
        with pytest.raises(urllib.error.HTTPError) as missing:
            rest(url, f"runs/get?run_id={urllib.parse.quote(run_id)}")
        assert missing.value.code == 404
    # mlflow gc empties the run's artifacts through the server (an empty folder may stay there)
    assert not old_folder.exists() or not any(p.is_file() for p in old_folder.rglob("*"))
    served = download(url, after[key], "model.json")
    assert served == (workdir / f"results/runs/{key}/model.json").read_bytes()
    # nor while the script's own gc purges what the UI deleted
    rest(url, "runs/delete", {"run_id": after[key]["info"]["run_id"]})
    with CommandLines(password) as seen:
        assert script(state, "gc").returncode == 0
    assert seen.gc_seen and not seen.leaks, seen.leaks
    with pytest.raises(urllib.error.HTTPError):
        rest(url, f"runs/get?run_id={urllib.parse.quote(after[key]['info']['run_id'])}")


def log_at_once(env: dict, barrier, fold: int, uid: str) -> None:
    """One client of the race below: a fold run and the parent's means, started together."""
    os.environ.update(env)
    from rankstudy.tracking.runs import log_fold_run, log_parent_metrics

    keys = dict(study="race", dataset="race", featureset="all", method="m")
    barrier.wait(timeout=120)
    log_fold_run(env["MLFLOW_TRACKING_URI"], "race", **keys, fold=fold, params={"uid": uid},
                 metrics={"test.map": fold / 10}, history=[], artifacts=[], uid=uid)
    log_parent_metrics(env["MLFLOW_TRACKING_URI"], "race", **keys, metrics={"mean.test.map": 0.5})


def test_concurrent_clients_converge_on_one_parent_and_one_run_per_fold(server):
    """Without a shared lock: 8 processes released together log into one parent that none of
    them finds (so each may create one) and two of them into each fold (so they replace each
    other's run). One parent and one run per fold stay, every fold under that parent, and
    whatever was deleted on the way is purged."""
    env, _ = server
    url = env["MLFLOW_TRACKING_URI"]
    context = multiprocessing.get_context("forkserver")
    barrier = context.Barrier(JOBS)
    workers = [context.Process(target=log_at_once, args=(env, barrier, k % 4, f"training{k}")) for k in range(JOBS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    assert [worker.exitcode for worker in workers] == [0] * JOBS

    experiment_id = rest(url, "experiments/get-by-name?experiment_name=race")["experiment"]["experiment_id"]
    runs = search(url, experiment_id)
    [parent] = level(runs, "parent")
    folds = level(runs, "fold")
    assert sorted(tags(run)["fold"] for run in folds) == ["0", "1", "2", "3"]
    assert {tags(run)["mlflow.parentRunId"] for run in folds} == {parent["info"]["run_id"]}
    assert {m["key"]: m["value"] for m in parent["data"]["metrics"]} == {"mean.test.map": 0.5}
    assert search(url, experiment_id, view="DELETED_ONLY") == []
