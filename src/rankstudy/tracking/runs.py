"""MLflow bookkeeping for the pipeline: one child run per fold, one parent per method.

Run layout inside an experiment (all findable by the ``rankstudy.key`` tag):

* parent  ``{dataset}/{featureset}/{method}``          ``rankstudy.level = parent``
* child   ``{dataset}/{featureset}/{method}/fold{k}``  ``rankstudy.level = fold``
  (nested under the parent through the ``mlflow.parentRunId`` tag)
* study   ``study/{study}/{dataset}``                  ``rankstudy.level = study``

Every function talks to the store through :class:`mlflow.MlflowClient` only, so
no global "active run" state is touched and they are safe in long-lived processes.

Concurrency: Snakemake runs up to ``--cores`` jobs at once. With an SQLite store,
concurrent writers fail with "database is locked" and concurrent first use runs
the alembic schema migrations twice, so every operation here holds an exclusive
``flock`` on ``<db>.lock`` (see :func:`tracking_lock`). A tracking server handles
concurrency itself; there the lock is a no-op and parent creation is made
convergent instead (the oldest live parent of a key wins).

Reruns: a fold run belongs to one training of the fold (the ``rankstudy.uid`` tag);
logging the same training again keeps its run (and run id), updating it only if what
it shows changed, so rerunning other folds, or adding a report metric, leaves it in
place. A new training (or a rerun of a study report) first logs the complete new run
and only then deletes the earlier runs of the same key, so a failed rerun leaves
the previous run in place. ``delete_run`` is MLflow's soft delete: deleted runs
vanish from the UI and from searches, but their rows and artifacts stay until
``mlflow gc --backend-store-uri ...`` purges them.

Metric names: MLflow only allows alphanumerics, ``_ - . / :`` and spaces in
metric and param names, so ``@`` is written as ``_at_`` (``test.ndcg@10`` is
logged as ``test.ndcg_at_10``) and any other disallowed character as ``_``; see
:func:`mlflow_key`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

# Offline, reproducible pipeline: no usage telemetry and no "View run at ..." lines
# on stdout. setdefault, so an explicit choice in the environment still wins.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")

import pandas as pd  # noqa: E402
from mlflow import MlflowClient  # noqa: E402
from mlflow.entities import Metric, Param, RunStatus, RunTag, ViewType  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402

# MLflow logs every schema migration step at INFO; warnings and errors still show.
for _name in ("mlflow", "alembic"):
    logging.getLogger(_name).setLevel(logging.WARNING)

log = logging.getLogger(__name__)

KEY_TAG = "rankstudy.key"
LEVEL_TAG = "rankstudy.level"
REVISION_TAG = "rankstudy.revision"
# MLflow 3's UI opens an experiment on its GenAI pages unless it is marked as model training
EXPERIMENT_KIND_TAG, EXPERIMENT_KIND = "mlflow.experimentKind", "custom_model_development"
UID_TAG = "rankstudy.uid"  # one training of a fold
CONTENT_TAG = "rankstudy.content"  # digest of what a fold run shows
PARENT_TAG = "mlflow.parentRunId"
DEFAULT_DB_NAME = "mlflow.db"

_held_locks = threading.local()  # lock files this thread already holds (re-entrancy)


# ---------------------------------------------------------------- URIs and locks


def resolve_tracking_uri(configured: str | None, results_dir: str | os.PathLike) -> str:
    """The tracking URI to use: $MLFLOW_TRACKING_URI, else ``configured``, else
    an SQLite file ``<results_dir>/mlflow.db`` (absolute, so it works from any cwd)."""
    from_env = os.environ.get("MLFLOW_TRACKING_URI", "").strip()
    if from_env:
        return from_env
    if configured and str(configured).strip():
        return str(configured).strip()
    db = Path(results_dir).resolve() / DEFAULT_DB_NAME
    return f"sqlite:///{db}"  # an absolute path gives SQLAlchemy's four slashes


def sqlite_path(uri: str) -> Path | None:
    """The database file of an ``sqlite:///`` URI, or None for any other store."""
    if not uri.startswith("sqlite:///"):
        return None  # includes in-memory "sqlite://"
    path = uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(path) if path else None


@contextlib.contextmanager
def tracking_lock(uri: str) -> Iterator[None]:
    """Exclusive inter-process lock around writes to ``uri``.

    For SQLite stores an ``flock`` on ``<db>.lock`` next to the database (created
    with its folder if missing); for servers and other stores a no-op. Re-entrant
    within one thread, so callers may wrap several calls in one lock.
    """
    db = sqlite_path(uri)
    if db is None:
        yield
        return
    lock_path = str(db.resolve()) + ".lock"
    held = _held_locks.__dict__.setdefault("paths", set())
    if lock_path in held:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # released when the file closes
        held.add(lock_path)
        try:
            yield
        finally:
            held.discard(lock_path)


# ---------------------------------------------------------------- names and values


def mlflow_key(name: str) -> str:
    """A metric/param name MLflow accepts: ``@`` -> ``_at_``, other invalid chars -> ``_``."""
    return re.sub(r"[^/\w.\- :]", "_", str(name).replace("@", "_at_"))


def flatten_params(params: Mapping, prefix: str = "") -> dict[str, str]:
    """Nested dicts become dotted keys; every value becomes a string."""
    flat: dict[str, str] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_params(value, prefix=f"{name}."))
        else:
            flat[name] = str(value)
    return flat


def _unique_keys(names: Iterable[str], what: str) -> dict[str, str]:
    """Map original names to MLflow keys; refuse two names that collide after mapping."""
    mapping: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name in names:
        key = mlflow_key(name)
        if key in seen and seen[key] != name:
            raise ValueError(f"{what} names {seen[key]!r} and {name!r} both map to {key!r}")
        seen[key] = name
        mapping[name] = key
    return mapping


def _param_entities(params: Mapping | None) -> list[Param]:
    flat = flatten_params(params or {})
    keys = _unique_keys(flat, "param")
    return [Param(keys[name], value) for name, value in flat.items()]


def _metric_entities(values: Mapping, step: int, timestamp: int) -> list[Metric]:
    """Metrics of one step; None values are skipped (e.g. a metric not computed)."""
    keys = _unique_keys(values, "metric")
    return [
        Metric(keys[name], float(value), timestamp, int(step))
        for name, value in values.items()
        if value is not None
    ]


def _history_entities(history: Iterable[Mapping], timestamp: int) -> list[Metric]:
    """Per-iteration metrics: each entry is ``{"step": k, name: value, ...}``."""
    metrics: list[Metric] = []
    for entry in history:
        values = {name: value for name, value in entry.items() if name != "step"}
        metrics.extend(_metric_entities(values, int(entry["step"]), timestamp))
    return metrics


def _tag_entities(tags: Mapping | None) -> list[RunTag]:
    return [RunTag(str(key), str(value)) for key, value in (tags or {}).items()]


def _check_artifacts(artifacts: Iterable[os.PathLike | str]) -> list[Path]:
    """Fail before anything is logged if an artifact is missing."""
    paths = [Path(artifact) for artifact in artifacts]
    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        raise FileNotFoundError(f"artifacts not found: {missing}")
    return paths


def _now_ms() -> int:
    return int(time.time() * 1000)


# ---------------------------------------------------------------- store helpers


def _preload_store_code(uri: str) -> None:
    """Import MLflow's SQL store (and configure its ORM mappers) before taking the
    lock: that costs 1-2 s of CPU per process, which parallel jobs can pay at the
    same time instead of one after the other while holding the lock."""
    if sqlite_path(uri) is None:
        return
    import sqlalchemy.orm
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401

    sqlalchemy.orm.configure_mappers()


def _client(uri: str) -> MlflowClient:
    return MlflowClient(tracking_uri=uri)


def _filter_eq(**tags: str) -> str:
    """An MLflow filter string matching tags exactly (keys backquoted for the dots)."""
    clauses = []
    for key, value in tags.items():
        if "'" in value:
            raise ValueError(f"tag value {value!r} must not contain a single quote")
        clauses.append(f"tags.`{key}` = '{value}'")
    return " and ".join(clauses)


def _search_all(client: MlflowClient, experiment_id: str, filter_string: str) -> list:
    """All live runs matching the filter, oldest first, across result pages."""
    runs: list = []
    page_token = None
    while True:
        page = client.search_runs(
            [experiment_id],
            filter_string,
            run_view_type=ViewType.ACTIVE_ONLY,
            max_results=1000,
            order_by=["attributes.start_time ASC"],
            page_token=page_token,
        )
        runs.extend(page)
        page_token = page.token
        if not page_token:
            return sorted(runs, key=lambda run: (run.info.start_time, run.info.run_id))


def _runs_with_key(client: MlflowClient, experiment_id: str, key: str, level: str) -> list:
    return _search_all(client, experiment_id, _filter_eq(**{KEY_TAG: key, LEVEL_TAG: level}))


def _artifact_location(uri: str) -> str | None:
    """Artifacts of an SQLite store go to ``<db dir>/mlartifacts`` rather than
    MLflow's default ``./mlruns`` relative to whatever the cwd happens to be.
    Servers choose their own location (None)."""
    db = sqlite_path(uri)
    if db is None:
        return None
    return (db.resolve().parent / "mlartifacts").as_uri()


def _experiment_id(client: MlflowClient, uri: str, name: str) -> str:
    """Get or create the experiment (restoring it if it was deleted in the UI)."""
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        try:
            return client.create_experiment(name, artifact_location=_artifact_location(uri),
                                            tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
        except MlflowException:
            # Another job (talking to a server, so without our lock) created it first.
            experiment = client.get_experiment_by_name(name)
            if experiment is None:
                raise
    if experiment.lifecycle_stage == "deleted":
        log.warning("restoring deleted MLflow experiment %r", name)
        client.restore_experiment(experiment.experiment_id)
    return experiment.experiment_id


def _create_run(client, experiment_id: str, run_name: str, tags: Mapping) -> str:
    run = client.create_run(experiment_id, run_name=run_name, tags=dict(tags))
    return run.info.run_id


def _log_payload(client, run_id: str, *, params=(), metrics=(), tags=(), artifacts=()) -> None:
    client.log_batch(run_id, metrics=list(metrics), params=list(params), tags=list(tags))
    for path in artifacts:
        if path.is_dir():
            client.log_artifacts(run_id, str(path), artifact_path=path.name)
        else:
            client.log_artifact(run_id, str(path))


def _replace_runs(client, experiment_id: str, key: str, level: str, new_run_id: str) -> None:
    """Delete every live run of ``key`` except the one just logged."""
    for run in _runs_with_key(client, experiment_id, key, level):
        if run.info.run_id != new_run_id:
            client.delete_run(run.info.run_id)


@contextlib.contextmanager
def _new_run_or_nothing(client, run_id: str, end_time: int | None = None) -> Iterator[None]:
    """Mark the run FINISHED on success; on failure mark it FAILED and delete it,
    so a half-logged run never replaces a complete earlier one."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            client.set_terminated(run_id, status=RunStatus.to_string(RunStatus.FAILED))
            client.delete_run(run_id)
        raise
    client.set_terminated(run_id, status=RunStatus.to_string(RunStatus.FINISHED), end_time=end_time)


def _parent_key(dataset: str, featureset: str, method: str) -> str:
    return f"{dataset}/{featureset}/{method}"


def _parent_run_id(client, experiment_id: str, dataset: str, featureset: str, method: str) -> str:
    """Get or create the parent run of (dataset, featureset, method).

    Without a lock (server stores) two jobs may both create one; the oldest live
    parent wins and a job that created a younger duplicate deletes it again.
    """
    key = _parent_key(dataset, featureset, method)
    existing = _runs_with_key(client, experiment_id, key, "parent")
    if existing:
        return existing[0].info.run_id
    tags = {KEY_TAG: key, LEVEL_TAG: "parent", "dataset": dataset,
            "featureset": featureset, "method": method}
    run_id = _create_run(client, experiment_id, f"{method} [{featureset}] {dataset}", tags)
    # A parent spans many jobs; FINISHED keeps the UI from showing it as running forever.
    client.set_terminated(run_id)
    winner = _runs_with_key(client, experiment_id, key, "parent")[0].info.run_id
    if winner != run_id:
        client.delete_run(run_id)
    return winner


# ---------------------------------------------------------------- public API


def _content_digest(params: Mapping, metrics: Mapping, tags: Mapping | None, paths: list[Path]) -> str:
    """What a fold run shows, as one digest: unchanged content needs no write."""
    h = hashlib.sha256(json.dumps([flatten_params(params), {k: repr(v) for k, v in metrics.items()},
                                   flatten_params(tags or {})], sort_keys=True).encode())
    for path in paths:
        h.update(path.name.encode())
        h.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"<dir>")
    return h.hexdigest()[:16]


def log_fold_run(
    uri: str,
    experiment: str,
    *,
    dataset: str,
    featureset: str,
    method: str,
    fold: int | str,
    params: Mapping,
    metrics: Mapping[str, float],
    history: list[Mapping],
    artifacts: Iterable[os.PathLike | str],
    tags: Mapping | None = None,
    uid: str | None = None,
    start_time: int | None = None,
    end_time: int | None = None,
) -> str:
    """Log one fold as a child run of its (dataset, featureset, method) parent; returns its id.

    ``uid`` names one training of the fold. A live run of this fold with the same uid is
    kept (same run id): if what it shows changed (e.g. a metric added to the report) its
    step-0 metrics, tags and artifacts are updated in place, else nothing is written. Any
    other uid (or none) makes a new run that replaces the earlier runs of the fold.
    ``metrics`` are logged at step 0, ``history`` entries at their own ``step``;
    ``start_time``/``end_time`` (ms since the epoch) are the fold job's, when given.
    """
    paths = _check_artifacts(artifacts)
    digest = _content_digest(params, metrics, tags, paths)
    timestamp = _now_ms()
    key = f"{_parent_key(dataset, featureset, method)}/fold{fold}"
    _preload_store_code(uri)
    with tracking_lock(uri):
        client = _client(uri)
        experiment_id = _experiment_id(client, uri, experiment)
        parent_id = _parent_run_id(client, experiment_id, dataset, featureset, method)
        same = [r for r in _runs_with_key(client, experiment_id, key, "fold")
                if uid is not None and r.data.tags.get(UID_TAG) == uid]
        if same:
            run = same[-1]
            if run.data.tags.get(CONTENT_TAG) != digest:
                _log_payload(client, run.info.run_id, metrics=_metric_entities(metrics, 0, timestamp),
                             tags=_tag_entities({**(tags or {}), CONTENT_TAG: digest}), artifacts=paths)
                client.set_terminated(run.info.run_id, end_time=end_time)
            return run.info.run_id
        run_tags = {KEY_TAG: key, LEVEL_TAG: "fold", PARENT_TAG: parent_id, "dataset": dataset,
                    "featureset": featureset, "method": method, "fold": str(fold), CONTENT_TAG: digest,
                    **({UID_TAG: uid} if uid is not None else {})}
        run_id = client.create_run(experiment_id, start_time=start_time, tags=run_tags,
                                   run_name=f"{method} [{featureset}] {dataset} fold{fold}").info.run_id
        with _new_run_or_nothing(client, run_id, end_time=end_time):
            _log_payload(client, run_id, params=_param_entities(params),
                         metrics=_metric_entities(metrics, 0, timestamp) + _history_entities(history, timestamp),
                         tags=_tag_entities(tags), artifacts=paths)
        _replace_runs(client, experiment_id, key, "fold", run_id)
    return run_id


def log_parent_metrics(
    uri: str,
    experiment: str,
    *,
    dataset: str,
    featureset: str,
    method: str,
    metrics: Mapping[str, float],
    artifacts: Iterable[os.PathLike | str] = (),
    tags: Mapping | None = None,
) -> str:
    """Set the fold-mean metrics on the parent run (created if missing).

    Each call logs all metrics at a new step (the parent's ``rankstudy.revision``
    tag, 0, 1, 2, ...), so the value the UI lists for a metric is the one of the
    latest call, and the metric's chart shows one point per call. A metric left
    out of a later call keeps its old value (MLflow cannot delete metrics).
    Returns the parent's run id.
    """
    paths = _check_artifacts(artifacts)
    _preload_store_code(uri)
    with tracking_lock(uri):
        client = _client(uri)
        experiment_id = _experiment_id(client, uri, experiment)
        parent_id = _parent_run_id(client, experiment_id, dataset, featureset, method)
        parent = client.get_run(parent_id)
        revision = int(parent.data.tags.get(REVISION_TAG, -1)) + 1
        _log_payload(
            client,
            parent_id,
            metrics=_metric_entities(metrics, revision, _now_ms()),
            tags=_tag_entities({**(tags or {}), REVISION_TAG: revision}),
            artifacts=paths,
        )
        client.set_terminated(parent_id)  # moves end_time to this call
    return parent_id


def log_study_run(
    uri: str,
    experiment: str,
    *,
    study: str,
    dataset: str,
    artifacts: Iterable[os.PathLike | str],
    params: Mapping | None = None,
    tags: Mapping | None = None,
) -> str:
    """Log the report of one (study, dataset) as its own run, replacing earlier ones."""
    paths = _check_artifacts(artifacts)
    key = f"study/{study}/{dataset}"
    run_tags = {KEY_TAG: key, LEVEL_TAG: "study", "study": study, "dataset": dataset}
    _preload_store_code(uri)
    with tracking_lock(uri):
        client = _client(uri)
        experiment_id = _experiment_id(client, uri, experiment)
        run_id = _create_run(client, experiment_id, f"study {study} [{dataset}]", run_tags)
        with _new_run_or_nothing(client, run_id):
            _log_payload(client, run_id, params=_param_entities(params),
                         tags=_tag_entities(tags), artifacts=paths)
        _replace_runs(client, experiment_id, key, "study", run_id)
    return run_id


FOLD_RUN_COLUMNS = ["run_id", "parent_run_id", "key", "dataset", "featureset", "method",
                    "fold", "status", "start_time"]


def fold_runs(uri: str, experiment: str) -> pd.DataFrame:
    """Live fold runs of ``experiment``: one row per run with its key tags, plus one
    ``metrics.<mlflow key>`` column per (latest) metric value. Empty if none."""
    _preload_store_code(uri)
    with tracking_lock(uri):  # first use of a fresh SQLite file creates the schema
        client = _client(uri)
        experiment_obj = client.get_experiment_by_name(experiment)
        if experiment_obj is None or experiment_obj.lifecycle_stage == "deleted":
            return pd.DataFrame(columns=FOLD_RUN_COLUMNS)
        runs = _search_all(client, experiment_obj.experiment_id, _filter_eq(**{LEVEL_TAG: "fold"}))
    rows = [_fold_row(run) for run in runs]
    return pd.DataFrame(rows, columns=_columns_of(rows))


def _fold_row(run) -> dict:
    tags = run.data.tags
    row = {
        "run_id": run.info.run_id,
        "parent_run_id": tags.get(PARENT_TAG),
        "key": tags.get(KEY_TAG),
        "dataset": tags.get("dataset"),
        "featureset": tags.get("featureset"),
        "method": tags.get("method"),
        "fold": _as_int(tags.get("fold")),
        "status": run.info.status,
        "start_time": run.info.start_time,
    }
    row.update({f"metrics.{name}": value for name, value in sorted(run.data.metrics.items())})
    return row


def _columns_of(rows: list[dict]) -> list[str]:
    metric_columns = sorted({name for row in rows for name in row} - set(FOLD_RUN_COLUMNS))
    return FOLD_RUN_COLUMNS + metric_columns


def _as_int(value: str | None) -> int | str | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


__all__ = [
    "FOLD_RUN_COLUMNS",
    "flatten_params",
    "fold_runs",
    "log_fold_run",
    "log_parent_metrics",
    "log_study_run",
    "mlflow_key",
    "resolve_tracking_uri",
    "sqlite_path",
    "tracking_lock",
]
