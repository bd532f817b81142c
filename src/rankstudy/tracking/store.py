"""Access to the MLflow tracking store: which store, its lock, its experiment, its searches,
and purging what was deleted. Everything goes through :class:`mlflow.MlflowClient` (no global
"active run" state, so it is safe in long-lived processes) and MLflow's ``gc`` command; nothing
of MLflow's internals, except where MLflow has no API: the artifact locations of an SQLite
store that moved (:mod:`rankstudy.tracking.relocate`).

SQLite lock: Snakemake runs up to ``--cores`` jobs at once. With an SQLite store, concurrent
writers fail with "database is locked" and concurrent first use runs the alembic schema
migrations twice, so every logging call holds an exclusive ``flock`` on ``<db>.lock``
(:func:`tracking_lock`). A tracking server has no lock that all clients share; there the
logging calls converge instead (:mod:`rankstudy.tracking.convergence`). A process outside the
pipeline that keeps the database itself locked (an ``mlflow ui`` writing, a ``sqlite3`` session)
makes each call try again for up to ``$RANKSTUDY_MLFLOW_LOCK_WAIT`` seconds (60), then fail with
:class:`~rankstudy.tracking.errors.StoreLocked`, one line naming the store.

Garbage collection: ``delete_run`` is MLflow's soft delete (deleted runs vanish from the UI and
from searches, but their rows and artifacts stay), so every run a logging call deletes
(replaced, duplicate or failed) is then purged by MLflow's own ``mlflow gc --run-ids``
(:func:`purge_runs`; the log_runs job purges all the runs it deleted with one, at its end,
:func:`purge_at_end`): for SQLite on the tracking store itself; for a server on its database,
named by ``$RANKSTUDY_MLFLOW_BACKEND_STORE_URI`` (``setup/cluster/mlflow-server.sh start``
prints it), its artifacts through the server. Without that variable the runs stay soft-deleted
until ``mlflow-server.sh gc`` (``mlflow gc``) purges them. A purge that fails is only a warning.
``mlflow gc`` runs in the purging process (:func:`mlflow_gc`), so the database URI is on no
command line, which every user can read.

A server that does not answer: MLflow's HTTP client retries a request for minutes by default;
here a request gives up after about 20 s (``MLFLOW_HTTP_REQUEST_*`` below, unless set in the
environment) and the job fails with :class:`TrackingUnavailable`
(:func:`fails_clearly_without_server`), whose message says how to start the server again.
Nothing is lost: the fold's files stay, and the next run logs them.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import io
import logging
import os
import threading
import time
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

import mlflow  # noqa: E402
from mlflow import MlflowClient  # noqa: E402
from mlflow.entities import ViewType  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402

from rankstudy.tracking.errors import TrackingUnavailable, server_unavailable, store_locked  # noqa: E402
from rankstudy.tracking.relocate import artifact_root, local_path, moved, relocate_artifacts  # noqa: E402

# MLflow logs every schema migration step at INFO; warnings and errors still show.
for _name in ("mlflow", "alembic"):
    logging.getLogger(_name).setLevel(logging.WARNING)

log = logging.getLogger(__name__)

DEFAULT_DB_NAME = "mlflow.db"
# The database behind a tracking server, for purging the runs a job deleted (no REST API does)
BACKEND_ENV = "RANKSTUDY_MLFLOW_BACKEND_STORE_URI"
# The experiment's kind, model training. MLflow 3's UI has code choosing its GenAI or model-training pages
# by it, but 3.17's builds with a per-browser switch that decides instead (docs/mlflow.md)
EXPERIMENT_KIND_TAG, EXPERIMENT_KIND = "mlflow.experimentKind", "custom_model_development"

_held_locks = threading.local()  # lock files this thread already holds (re-entrancy)


# ---------------------------------------------------------------- URIs and locks


_UNREACHABLE = ("connection refused", "max retries exceeded", "failed to establish a new connection",
                "name or service not known", "timed out", "remote end closed connection")


def _unreachable(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(word in text for word in _UNREACHABLE)


def is_server(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


# A store locked by a process outside the pipeline (an `mlflow ui` writing, a `sqlite3` session):
# each statement already waits SQLite's busy timeout (5 s); the whole call is then tried again,
# for about this many seconds in all (the calls are idempotent: a half-logged run is replaced)
LOCK_WAIT_ENV = "RANKSTUDY_MLFLOW_LOCK_WAIT"
DEFAULT_LOCK_WAIT = 60.0


def lock_wait() -> float:
    try:
        return max(0.0, float(os.environ.get(LOCK_WAIT_ENV, DEFAULT_LOCK_WAIT)))
    except ValueError:
        return DEFAULT_LOCK_WAIT


def is_locked(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" (under SQLAlchemy's and MLflow's errors)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if "database is locked" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def fails_clearly_without_server(fn):
    """Turn a request that a stopped (or unreachable) server refused into TrackingUnavailable, and an
    SQLite store that another process keeps locked, after a bounded retry, into StoreLocked: one
    line naming the store instead of SQLAlchemy's traceback."""

    @functools.wraps(fn)
    def wrapper(uri: str, *args, **kwargs):
        started, pause = time.monotonic(), 1.0
        while True:
            try:
                return fn(uri, *args, **kwargs)
            except TrackingUnavailable:
                raise  # an inner call said it already
            except Exception as exc:  # MlflowException, requests' ConnectionError, SQLAlchemy's errors, ...
                db = sqlite_path(uri)
                if db is not None and is_locked(exc):
                    waited = time.monotonic() - started
                    if waited + pause > lock_wait():
                        raise store_locked(db, waited) from None
                    log.warning("MLflow store %s is locked by another process: trying again in %.0f s", db, pause)
                    time.sleep(pause)
                    pause = min(2 * pause, 10.0)
                    continue
                if not (is_server(uri) and _unreachable(exc)):
                    raise
                raise server_unavailable(uri, str(exc)) from None

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


# ---------------------------------------------------------------- store helpers


def now_ms() -> int:
    return int(time.time() * 1000)


def client(uri: str) -> MlflowClient:
    return MlflowClient(tracking_uri=uri)


def filter_eq(**tags: str) -> str:
    """An MLflow filter string matching tags exactly (keys backquoted for the dots)."""
    clauses = []
    for key, value in tags.items():
        if "'" in value:
            raise ValueError(f"tag value {value!r} must not contain a single quote")
        clauses.append(f"tags.`{key}` = '{value}'")
    return " and ".join(clauses)


def search_all(client: MlflowClient, experiment_id: str, filter_string: str,
               view: int = ViewType.ACTIVE_ONLY) -> list:
    """All live (or, with ``view``, deleted) runs matching the filter, oldest first (start time,
    then run id), across result pages."""
    runs: list = []
    page_token = None
    while True:
        page = client.search_runs(
            [experiment_id],
            filter_string,
            run_view_type=view,
            max_results=1000,
            order_by=["attributes.start_time ASC"],
            page_token=page_token,
        )
        runs.extend(page)
        page_token = page.token
        if not page_token:
            return sorted(runs, key=lambda run: (run.info.start_time, run.info.run_id))


def create_run(client, experiment_id: str, run_name: str, tags: Mapping) -> str:
    run = client.create_run(experiment_id, run_name=run_name, tags=dict(tags))
    return run.info.run_id


def exists(client, run_id: str) -> bool:
    """Whether the run is in the store at all (live or soft-deleted)."""
    try:
        client.get_run(run_id)
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return False
        raise
    return True


def is_live(client, run_id: str) -> bool:
    try:
        return client.get_run(run_id).info.lifecycle_stage == "active"
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return False
        raise


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


# ---------------------------------------------------------------- experiments


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
    if is_server(uri) and local:
        _warn_once(f"MLflow experiment {experiment.name!r} on {uri} keeps its artifacts in {location!r}, "
                   "a folder on one machine: use a new experiment on a server started with --serve-artifacts "
                   "(setup/cluster/mlflow-server.sh) so that artifacts are mlflow-artifacts: URIs")


def experiment_id(client: MlflowClient, uri: str, name: str) -> str:
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
    if experiment.tags.get(EXPERIMENT_KIND_TAG) is None:
        # a store made before rankstudy set the kind
        client.set_experiment_tag(experiment.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    db = sqlite_path(uri)
    if db is not None and moved(experiment.artifact_location, artifact_root(db)):
        # the store moved with its folder: its runs follow it (MLflow recorded the old absolute path)
        for old, new in relocate_artifacts(db):
            log.warning("MLflow store %s moved: artifact locations %s -> %s", db, old, new)
    _check_artifact_location(uri, experiment)
    return experiment.experiment_id


# ---------------------------------------------------------------- garbage collection


def _gc_backend(uri: str) -> str | None:
    """The database ``mlflow gc`` purges from: the tracking store itself for database URIs,
    ``$RANKSTUDY_MLFLOW_BACKEND_STORE_URI`` (the server's own database) for a server; None (with
    a warning) when there is none."""
    if not is_server(uri):
        return uri
    backend = os.environ.get(BACKEND_ENV, "").strip()
    if not backend:
        _warn_once(f"runs deleted on {uri} stay soft-deleted (MLflow's REST API cannot purge them): "
                   f"set {BACKEND_ENV} to the server's backend store URI (setup/cluster/mlflow-server.sh "
                   "start prints it) to purge them at once, or run `mlflow-server.sh gc` / `mlflow gc`")
        return None
    return backend


def mlflow_gc(backend: str, uri: str, run_ids: list[str]) -> str | None:
    """MLflow's own ``mlflow gc --run-ids`` purging ``run_ids`` from ``backend`` (artifacts first,
    through ``uri`` when it is a server), run in this process by its click command as the ``mlflow``
    executable runs it: a ``mlflow gc`` process imported MLflow again, about 3 CPU-s a purge (the
    dearest part of re-logging a study), and had to get the database URI, with its password, past
    the command line every user can read. The tracking URI the command sets is put back. Returns
    None once they are purged, else the command's error message."""
    # MLflow's CLI module imports its server too (seconds): only a purge pays for it
    from mlflow.cli import gc

    # the command sets MLflow's tracking URI, and with it $MLFLOW_TRACKING_URI, which the processes
    # started from here would inherit (a pipeline run's store): both as they were after it (None: unset)
    previous = os.environ.get("MLFLOW_TRACKING_URI")
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # its line per purged run
            gc.main(["--backend-store-uri", backend, "--tracking-uri", uri, "--run-ids", ",".join(run_ids)],
                    prog_name="mlflow gc", standalone_mode=False)
    except Exception as error:  # MlflowException, click's usage errors, a database error
        return str(error).strip() or type(error).__name__
    finally:
        mlflow.set_tracking_uri(previous)
    return None


_batch = threading.local()  # the runs a purge_at_end block has deleted so far, per store


@contextlib.contextmanager
def purge_at_end() -> Iterator[None]:
    """Purge the runs that the logging calls inside this block delete together, with one ``mlflow
    gc`` per store when the block ends (also when it fails), instead of one per call: re-logging a
    study after ``--forceall`` replaced every fold run, and one gc process per call took 462 s for
    the default study against 11.8 s the first time (log_runs). Until then the runs are
    soft-deleted, hidden from the UI and from searches, and carry ``rankstudy.deleted``, so a block
    killed before its end leaves them to the next logging of their fold. Nested blocks purge at the
    outermost one's end."""
    if getattr(_batch, "runs", None) is not None:
        yield
        return
    _batch.runs = {}
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        batch, _batch.runs = _batch.runs, None
        for uri, run_ids in batch.items():
            try:
                with tracking_lock(uri):
                    purge_runs(client(uri), uri, run_ids)
            except Exception:
                if not failed:
                    raise
                # the block's own error is the one to see; the runs stay for the next logging of their fold
                log.warning("runs deleted on %s stay soft-deleted: the purge after a failure failed too", uri)


def purge_runs(client, uri: str, run_ids: Iterable[str]) -> None:
    """Permanently delete runs this call soft-deleted with MLflow's own ``mlflow gc --run-ids``
    (its public command: artifacts first, through the server when there is one, then the rows).
    Runs already gone are skipped. A failure is a warning: the runs stay soft-deleted, for a later
    ``mlflow gc``. Inside a :func:`purge_at_end` block the runs are purged at its end instead."""
    if getattr(_batch, "runs", None) is not None:
        _batch.runs.setdefault(uri, []).extend(run_ids)
        return
    runs = [client.get_run(r) for r in dict.fromkeys(run_ids) if exists(client, r)]
    runs = [run for run in runs if run.info.lifecycle_stage == "deleted"]
    backend = _gc_backend(uri) if runs else None
    if not backend:
        return
    if mlflow_gc(backend, uri, [run.info.run_id for run in runs]) is not None:
        # another client may have purged one of them meanwhile (gc then fails as a whole): one by one
        for run in runs:
            if exists(client, run.info.run_id) and (error := mlflow_gc(backend, uri, [run.info.run_id])) \
                    and exists(client, run.info.run_id):
                log.warning("cannot purge run %s (it stays soft-deleted): %s", run.info.run_id, error.splitlines()[-1])
    for run in runs:  # gc empties a local run's artifact folder; its empty <run id> folder goes too
        folder = local_path(run.info.artifact_uri or "")
        if folder is not None and folder.name == "artifacts" and folder.parent.name == run.info.run_id:
            for empty in (folder, folder.parent):
                with contextlib.suppress(OSError):
                    empty.rmdir()
