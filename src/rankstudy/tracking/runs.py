"""MLflow bookkeeping for the pipeline: one child run per fold, one parent per method.

Run layout inside an experiment (all findable by the ``rankstudy.key`` tag):

* parent  ``{study}/{dataset}/{featureset}/{method}``          ``rankstudy.level = parent``
* child   ``{study}/{dataset}/{featureset}/{method}/fold{k}``  ``rankstudy.level = fold``
  (nested under the parent through the ``mlflow.parentRunId`` tag)
* study   ``study/{study}/{dataset}``                  ``rankstudy.level = study``

Every function talks to the store through :class:`mlflow.MlflowClient` only, so
no global "active run" state is touched and they are safe in long-lived processes.

Concurrency: Snakemake runs up to ``--cores`` jobs at once. With an SQLite store,
concurrent writers fail with "database is locked" and concurrent first use runs
the alembic schema migrations twice, so every operation here holds an exclusive
``flock`` on ``<db>.lock`` (see :func:`tracking_lock`). A tracking server (or any
other store) has no lock that all clients share, and its HTTP client retries a
request that failed, which may have created a run after all; there every step is
made convergent instead, by one order all clients agree on whatever they saw:

* parents: the oldest live parent of a key wins (start time, then run id). Whoever
  sees younger duplicates deletes them and moves their children to the winner, and
  every job checks after its last write that its parent is still the winner (and
  moves its child, or logs its means again, if not). Whoever attaches a child to a
  parent that is being deleted either has it moved by the deleter (attached before
  the deleter looked for children) or sees the deletion in its check (attached
  after), so no child stays under a deleted parent.
* fold and study runs: the run logged last wins (the ``rankstudy.logged`` tag, ms
  and a token per call, then run id). After finishing its run a job deletes every
  live run of its key older than the newest finished one, its own included if a
  newer one exists; runs newer than that and still being logged are left to their
  own job; retried creations of its own call (same token) are always deleted. Of two
  concurrent loggers of one key at least the later one sees the other, so exactly
  the newest finished run survives and nothing is deleted by both.

In a pipeline run each key is logged by one job (the fold and parent runs of a
(dataset, feature set, method) by its ``aggregate`` job, a study run by its
``tables`` job), so these rules matter for retried requests and for two pipelines
logging the same keys to one server at the same time.

Reruns: a fold run belongs to one training of the fold (the ``rankstudy.uid`` tag);
logging the same training again keeps its run (and run id), updating it only if what
it shows changed, so rerunning other folds, or adding a report metric, leaves it in
place. A new training (or a rerun of a study report) first logs the complete new run
and only then deletes the earlier runs of the same key, so a failed rerun leaves
the previous run in place.

Garbage collection: ``delete_run`` is MLflow's soft delete (deleted runs vanish from
the UI and from searches, but their rows and artifacts stay), so every run deleted
here (replaced, duplicate or failed) is then purged by MLflow's own ``mlflow gc
--run-ids`` (:func:`_purge_runs`): for SQLite on the tracking store itself; for a
server on its database, named by ``$RANKSTUDY_MLFLOW_BACKEND_STORE_URI``
(``workflow/cluster/mlflow-server.sh start`` prints it), its artifacts through the
server. Without that variable the runs stay soft-deleted until ``mlflow-server.sh gc``
(``mlflow gc``) purges them. A purge that fails is only a warning. Everything here uses
MLflow's public client API and its ``gc`` command, nothing of its internals, except where
MLflow has no API: the artifact locations of an SQLite store that moved
(:mod:`rankstudy.tracking.relocate`).

A server that does not answer: MLflow's HTTP client retries a request for minutes by
default; here a request gives up after about 20 s (``MLFLOW_HTTP_REQUEST_*`` below, unless
set in the environment) and the job fails with :class:`TrackingUnavailable`, whose message
says how to start the server again. Nothing is lost: the fold's files stay, and the next
run logs them.

Metric names: MLflow only allows alphanumerics, ``_ - . / :`` and spaces in
metric and param names, so ``@`` is written as ``_at_`` (``test.ndcg@10`` is
logged as ``test.ndcg_at_10``) and any other disallowed character as ``_``; see
:func:`mlflow_key`.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

# Offline, reproducible pipeline: no usage telemetry and no "View run at ..." lines
# on stdout. setdefault, so an explicit choice in the environment still wins.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
# a stopped server: fail within ~20 s (3 retries, 1-2-4 s apart, 5 s timeouts), not minutes
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")

import pandas as pd  # noqa: E402
from mlflow import MlflowClient  # noqa: E402
from mlflow.entities import Metric, Param, RunStatus, RunTag, ViewType  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402

from rankstudy.tracking.errors import TrackingUnavailable  # noqa: E402
from rankstudy.tracking.relocate import artifact_root, moved, relocate_artifacts  # noqa: E402

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
LOGGED_TAG = "rankstudy.logged"  # "<ms>.<token>": when and by which call a fold or study run was logged
PARENT_TAG = "mlflow.parentRunId"
DEFAULT_DB_NAME = "mlflow.db"
# The database behind a tracking server, for purging the runs a job deleted (no REST API does)
BACKEND_ENV = "RANKSTUDY_MLFLOW_BACKEND_STORE_URI"
FINISHED = RunStatus.to_string(RunStatus.FINISHED)

_held_locks = threading.local()  # lock files this thread already holds (re-entrancy)


# ---------------------------------------------------------------- URIs and locks


_UNREACHABLE = ("connection refused", "max retries exceeded", "failed to establish a new connection",
                "name or service not known", "timed out", "remote end closed connection")


def _unreachable(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(word in text for word in _UNREACHABLE)


def fails_clearly_without_server(fn):
    """Turn a request that a stopped (or unreachable) server refused into TrackingUnavailable."""

    @functools.wraps(fn)
    def wrapper(uri: str, *args, **kwargs):
        try:
            return fn(uri, *args, **kwargs)
        except Exception as exc:  # MlflowException, requests' ConnectionError, ...
            if not (_is_server(uri) and _unreachable(exc)):
                raise
            raise TrackingUnavailable(
                f"the MLflow tracking server {uri} does not answer ({str(exc).splitlines()[0][:200]}); start it "
                f"again with: eval \"$(bash workflow/cluster/mlflow-server.sh start)\" (or unset "
                f"MLFLOW_TRACKING_URI for the local SQLite store), then rerun: nothing is lost, the next run "
                f"logs what this one could not") from None

    return wrapper


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


def _is_server(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


def _artifact_location(uri: str) -> str | None:
    """Artifacts of an SQLite store go to ``<db dir>/mlartifacts`` rather than
    MLflow's default ``./mlruns`` relative to whatever the cwd happens to be.
    Servers choose their own location (None): with ``--serve-artifacts`` that is
    ``mlflow-artifacts:/``, which every client reaches through the server."""
    db = sqlite_path(uri)
    return None if db is None else artifact_root(db)


def _check_artifact_location(uri: str, experiment) -> None:
    """Warn when a server's experiment keeps artifacts in a folder: each client would write
    them to that path on its own machine instead of sending them to the server."""
    location = experiment.artifact_location or ""
    local = location.startswith(("/", "file:")) or ":" not in location  # a path, absolute or not
    if _is_server(uri) and local:
        _warn_once(f"MLflow experiment {experiment.name!r} on {uri} keeps its artifacts in {location!r}, "
                   "a folder on one machine: use a new experiment on a server started with --serve-artifacts "
                   "(workflow/cluster/mlflow-server.sh) so that artifacts are mlflow-artifacts: URIs")


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
    db = sqlite_path(uri)
    if db is not None and moved(experiment.artifact_location, artifact_root(db)):
        # the store moved with its folder: its runs follow it (MLflow recorded the old absolute path)
        for old, new in relocate_artifacts(db):
            log.warning("MLflow store %s moved: artifact locations %s -> %s", db, old, new)
    _check_artifact_location(uri, experiment)
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


def _is_live(client, run_id: str) -> bool:
    try:
        return client.get_run(run_id).info.lifecycle_stage == "active"
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return False
        raise


def _unless_gone(client, run_id: str, action, *args, **kwargs) -> bool:
    """``action(*args, **kwargs)``; False instead of an error if the run was deleted
    (or purged) meanwhile by another client settling duplicates."""
    try:
        action(*args, **kwargs)
    except MlflowException:
        if _is_live(client, run_id):
            raise
        return False
    return True


def _delete(client, run_id: str, deleted: list[str]) -> None:
    """Soft-delete a run (and note it for :func:`_purge_runs`); one already purged is fine."""
    try:
        client.delete_run(run_id)
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return
        raise
    deleted.append(run_id)


def _logged_token() -> str:
    """Names one logging call: ms since the epoch (the order of calls) and a random part."""
    return f"{_now_ms()}.{uuid.uuid4().hex[:12]}"


def _logged_order(run) -> tuple[int, str]:
    """The order of the fold (or study) runs of one key: when they were logged, then run id.
    Runs logged before the tag existed count from their start time."""
    ms = run.data.tags.get(LOGGED_TAG, "").partition(".")[0]
    return (int(ms) if ms.isdigit() else int(run.info.start_time or 0), run.info.run_id)


def _replace_runs(client, experiment_id: str, key: str, level: str, new_run_id: str,
                  token: str, deleted: list[str]) -> str:
    """Settle the live runs of ``key`` once ``new_run_id`` is logged and finished; returns
    the run that stays: the newest finished one (:func:`_logged_order`), normally ours.

    Runs older than it are deleted (ours too, if another client logged a newer one);
    newer runs that are still being logged are left to their own job, which settles
    after it finished; runs of this call (``token``: a creation the HTTP client retried)
    always go. Deleted ids are added to ``deleted``.
    """
    runs = _runs_with_key(client, experiment_id, key, level)
    finished = [run for run in runs if run.info.status == FINISHED or run.info.run_id == new_run_id]
    if not finished:  # ours was replaced by a newer run meanwhile, and that one failed
        return new_run_id
    keep = max(finished, key=_logged_order)
    for run in runs:
        if run.info.run_id == keep.info.run_id:
            continue
        if run.data.tags.get(LOGGED_TAG) == token or _logged_order(run) < _logged_order(keep):
            _delete(client, run.info.run_id, deleted)
    return keep.info.run_id


@contextlib.contextmanager
def _new_run_or_nothing(client, uri: str, run_id: str, end_time: int | None = None) -> Iterator[None]:
    """Mark the run FINISHED on success; on failure mark it FAILED, delete and purge it,
    so a half-logged run never replaces a complete earlier one."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            client.set_terminated(run_id, status=RunStatus.to_string(RunStatus.FAILED))
        with contextlib.suppress(Exception):
            client.delete_run(run_id)
            _purge_runs(client, uri, [run_id])
        raise
    client.set_terminated(run_id, status=FINISHED, end_time=end_time)


def _parent_key(study: str, dataset: str, featureset: str, method: str) -> str:
    return f"{study}/{dataset}/{featureset}/{method}"


def _parent_run_id(client, experiment_id: str, study: str, dataset: str, featureset: str, method: str,
                   deleted: list[str]) -> str:
    """Get or create the parent run of (study, dataset, featureset, method).

    The oldest live parent of the key wins; younger ones (created at the same time by
    clients that share no lock, or by a retried request) are deleted here, into
    ``deleted``, and their children moved to the winner.
    """
    key = _parent_key(study, dataset, featureset, method)
    parents = _runs_with_key(client, experiment_id, key, "parent")
    if not parents:
        tags = {KEY_TAG: key, LEVEL_TAG: "parent", "study": study, "dataset": dataset,
                "featureset": featureset, "method": method}
        run_id = _create_run(client, experiment_id, f"{method} [{featureset}] {dataset} ({study})", tags)
        # A parent spans many jobs; FINISHED keeps the UI from showing it as running forever.
        _unless_gone(client, run_id, client.set_terminated, run_id)
        parents = _runs_with_key(client, experiment_id, key, "parent")
        if not parents:  # cannot happen: nobody deletes the oldest parent
            return run_id
    winner = parents[0].info.run_id
    for run in parents[1:]:
        _delete(client, run.info.run_id, deleted)
        for child in _search_all(client, experiment_id, _filter_eq(**{PARENT_TAG: run.info.run_id})):
            _unless_gone(client, child.info.run_id, client.set_tag, child.info.run_id, PARENT_TAG, winner)
    return winner


SETTLE_ROUNDS = 10  # a parent settles in one or two rounds; more means something else is wrong


def _confirm_parent(client, experiment_id: str, study: str, dataset: str, featureset: str, method: str,
                    child_id: str, parent_id: str, deleted: list[str]) -> str:
    """After a child was attached to ``parent_id`` without a lock: resolve the parent again
    and move the child until the parent it names is the one every client settles on."""
    for _ in range(SETTLE_ROUNDS):
        winner = _parent_run_id(client, experiment_id, study, dataset, featureset, method, deleted)
        if winner == parent_id:
            return winner
        _unless_gone(client, child_id, client.set_tag, child_id, PARENT_TAG, winner)
        parent_id = winner
    log.warning("parent run of %s did not settle in %d rounds", _parent_key(study, dataset, featureset, method),
                SETTLE_ROUNDS)
    return parent_id


# ---------------------------------------------------------------- garbage collection


def _gc_backend(uri: str) -> str | None:
    """The database ``mlflow gc`` purges from: the tracking store itself for database URIs,
    ``$RANKSTUDY_MLFLOW_BACKEND_STORE_URI`` (the server's own database) for a server; None (with
    a warning) when there is none."""
    if not _is_server(uri):
        return uri
    backend = os.environ.get(BACKEND_ENV, "").strip()
    if not backend:
        _warn_once(f"runs deleted on {uri} stay soft-deleted (MLflow's REST API cannot purge them): "
                   f"set {BACKEND_ENV} to the server's backend store URI (workflow/cluster/mlflow-server.sh "
                   "start prints it) to purge them at once, or run `mlflow-server.sh gc` / `mlflow gc`")
        return None
    return backend


def _purge_runs(client, uri: str, run_ids: Iterable[str]) -> None:
    """Permanently delete runs this call soft-deleted with MLflow's own ``mlflow gc --run-ids``
    (its public command: artifacts first, through the server when there is one, then the rows).
    Runs already gone are skipped. A failure is a warning: the runs stay soft-deleted, for a later
    ``mlflow gc``."""
    runs = [client.get_run(r) for r in dict.fromkeys(run_ids) if _exists(client, r)]
    runs = [run for run in runs if run.info.lifecycle_stage == "deleted"]
    backend = _gc_backend(uri) if runs else None
    if not backend:
        return
    env = dict(os.environ, MLFLOW_TRACKING_URI=uri)  # gc reaches a server's artifacts through it

    def gc(ids: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mlflow", "gc", "--backend-store-uri", backend,
                               "--run-ids", ",".join(ids)], env=env, capture_output=True, text=True)

    done = gc([run.info.run_id for run in runs])
    if done.returncode != 0:
        # another client may have purged one of them meanwhile (gc then fails as a whole): one by one
        for run in runs:
            if _exists(client, run.info.run_id) and (done := gc([run.info.run_id])).returncode != 0 \
                    and _exists(client, run.info.run_id):
                log.warning("cannot purge run %s (it stays soft-deleted): %s", run.info.run_id,
                            (done.stderr.strip().splitlines() or ["mlflow gc failed"])[-1])
    for run in runs:  # gc empties a local run's artifact folder; its empty <run id> folder goes too
        folder = _local_path(run.info.artifact_uri or "")
        if folder is not None and folder.name == "artifacts" and folder.parent.name == run.info.run_id:
            for empty in (folder, folder.parent):
                with contextlib.suppress(OSError):
                    empty.rmdir()


def _local_path(uri: str) -> Path | None:
    if uri.startswith("file://"):
        return Path(urllib.parse.unquote(urllib.parse.urlparse(uri).path))
    return Path(uri) if uri.startswith("/") else None


def _exists(client, run_id: str) -> bool:
    try:
        client.get_run(run_id)
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return False
        raise
    return True


# ---------------------------------------------------------------- public API


def _content_digest(params: Mapping, metrics: Mapping, tags: Mapping | None, paths: list[Path]) -> str:
    """What a fold run shows, as one digest: unchanged content needs no write."""
    h = hashlib.sha256(json.dumps([flatten_params(params), {k: repr(v) for k, v in metrics.items()},
                                   flatten_params(tags or {})], sort_keys=True).encode())
    for path in paths:
        h.update(path.name.encode())
        h.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"<dir>")
    return h.hexdigest()[:16]


@fails_clearly_without_server
def log_fold_run(
    uri: str,
    experiment: str,
    *,
    study: str,
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
    """Log one fold as a child run of its (study, dataset, featureset, method) parent; returns its id.

    ``uid`` names one training of the fold. A live run of this fold with the same uid is
    kept (same run id): if what it shows changed (e.g. a metric added to the report) its
    step-0 metrics, tags and artifacts are updated in place, else nothing is written. Any
    other uid (or none) makes a new run that replaces the earlier runs of the fold, which
    are then purged from the store.
    ``metrics`` are logged at step 0, ``history`` entries at their own ``step``;
    ``start_time``/``end_time`` (ms since the epoch) are the fold job's, when given.
    """
    paths = _check_artifacts(artifacts)
    digest = _content_digest(params, metrics, tags, paths)
    timestamp = _now_ms()
    key = f"{_parent_key(study, dataset, featureset, method)}/fold{fold}"
    locked = sqlite_path(uri) is not None
    with tracking_lock(uri):
        client = _client(uri)
        experiment_id = _experiment_id(client, uri, experiment)
        deleted: list[str] = []
        parent_id = _parent_run_id(client, experiment_id, study, dataset, featureset, method, deleted)
        same = [r for r in _runs_with_key(client, experiment_id, key, "fold")
                if uid is not None and r.data.tags.get(UID_TAG) == uid]
        if same:
            run = same[-1]
            run_id = run.info.run_id
            if run.data.tags.get(CONTENT_TAG) != digest:
                _log_payload(client, run_id, metrics=_metric_entities(metrics, 0, timestamp),
                             tags=_tag_entities({**(tags or {}), CONTENT_TAG: digest}), artifacts=paths)
                client.set_terminated(run_id, end_time=end_time)
            if run.data.tags.get(PARENT_TAG) != parent_id:  # its parent was replaced meanwhile
                client.set_tag(run_id, PARENT_TAG, parent_id)
        else:
            token = _logged_token()
            run_tags = {KEY_TAG: key, LEVEL_TAG: "fold", PARENT_TAG: parent_id, "study": study, "dataset": dataset,
                        "featureset": featureset, "method": method, "fold": str(fold), CONTENT_TAG: digest,
                        LOGGED_TAG: token, **({UID_TAG: uid} if uid is not None else {})}
            run_id = client.create_run(experiment_id, start_time=start_time, tags=run_tags,
                                       run_name=f"{method} [{featureset}] {dataset} fold{fold} ({study})").info.run_id
            with _new_run_or_nothing(client, uri, run_id, end_time=end_time):
                _log_payload(client, run_id, params=_param_entities(params),
                             metrics=_metric_entities(metrics, 0, timestamp) + _history_entities(history, timestamp),
                             tags=_tag_entities(tags), artifacts=paths)
            run_id = _replace_runs(client, experiment_id, key, "fold", run_id, token, deleted)
        if not locked:
            _confirm_parent(client, experiment_id, study, dataset, featureset, method, run_id, parent_id, deleted)
        _purge_runs(client, uri, deleted)
    return run_id


@fails_clearly_without_server
def log_parent_metrics(
    uri: str,
    experiment: str,
    *,
    study: str,
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
    Without a lock (a server) the parent is resolved again after the write, and the
    write repeated on the parent every client settles on if that is another one.
    Returns the parent's run id.
    """
    paths = _check_artifacts(artifacts)
    locked = sqlite_path(uri) is not None
    with tracking_lock(uri):
        client = _client(uri)
        experiment_id = _experiment_id(client, uri, experiment)
        deleted: list[str] = []
        written = None
        for _ in range(SETTLE_ROUNDS):
            parent_id = _parent_run_id(client, experiment_id, study, dataset, featureset, method, deleted)
            if parent_id == written:
                break
            try:
                revision = int(client.get_run(parent_id).data.tags.get(REVISION_TAG, -1)) + 1
            except MlflowException:
                if _is_live(client, parent_id):
                    raise
                continue  # deleted as a duplicate meanwhile: resolve again
            payload = dict(metrics=_metric_entities(metrics, revision, _now_ms()),
                           tags=_tag_entities({**(tags or {}), REVISION_TAG: revision}), artifacts=paths)
            if (_unless_gone(client, parent_id, _log_payload, client, parent_id, **payload)
                    and _unless_gone(client, parent_id, client.set_terminated, parent_id)):  # end_time: now
                written = parent_id
            if locked and written:
                break
        else:
            log.warning("the means of %s were not confirmed on a settled parent run after %d rounds",
                        _parent_key(study, dataset, featureset, method), SETTLE_ROUNDS)
        _purge_runs(client, uri, deleted)
    return parent_id


@fails_clearly_without_server
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
    """Log the report of one (study, dataset) as its own run, replacing (and purging) earlier ones."""
    paths = _check_artifacts(artifacts)
    key = f"study/{study}/{dataset}"
    token = _logged_token()
    run_tags = {KEY_TAG: key, LEVEL_TAG: "study", "study": study, "dataset": dataset, LOGGED_TAG: token}
    with tracking_lock(uri):
        client = _client(uri)
        experiment_id = _experiment_id(client, uri, experiment)
        deleted: list[str] = []
        run_id = _create_run(client, experiment_id, f"study {study} [{dataset}]", run_tags)
        with _new_run_or_nothing(client, uri, run_id):
            _log_payload(client, run_id, params=_param_entities(params),
                         tags=_tag_entities(tags), artifacts=paths)
        run_id = _replace_runs(client, experiment_id, key, "study", run_id, token, deleted)
        _purge_runs(client, uri, deleted)
    return run_id


FOLD_RUN_COLUMNS = ["run_id", "parent_run_id", "key", "study", "dataset", "featureset", "method",
                    "fold", "status", "start_time"]


@fails_clearly_without_server
def fold_runs(uri: str, experiment: str) -> pd.DataFrame:
    """Live fold runs of ``experiment``: one row per run with its key tags, plus one
    ``metrics.<mlflow key>`` column per (latest) metric value. Empty if none."""
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
        "study": tags.get("study"),
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
    "TrackingUnavailable",
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
