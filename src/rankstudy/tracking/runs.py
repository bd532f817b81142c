"""MLflow bookkeeping for the pipeline: one child run per fold, one parent per method.

Run layout inside an experiment (all findable by the ``rankstudy.key`` tag):

* parent  ``{study}/{dataset}/{featureset}/{method}``          ``rankstudy.level = parent``
* child   ``{study}/{dataset}/{featureset}/{method}/fold{k}``  ``rankstudy.level = fold``
  (nested under the parent through the ``mlflow.parentRunId`` tag)
* candidate ``.../fold{k}/candidate{n}``  ``rankstudy.level = candidate``: one per row of the
  fold's ``selection.csv`` (a grid candidate), nested under its fold run (:func:`rankstudy.tracking.nested.nested_runs`)
* study   ``study/{study}/{dataset}``                  ``rankstudy.level = study``

Run names start with the study (``default: ranknet [first] MQ2008 fold1``): the runs table cuts
names at its column's width, and every study shares the experiment.

This module is the public logging API. The store they log to (its URI, the SQLite lock,
purging deleted runs, a server that does not answer) is :mod:`rankstudy.tracking.store`; how
concurrent writers of one key, which share no lock on a tracking server, end with one run per
key is :mod:`rankstudy.tracking.convergence`.

Reruns: a fold run belongs to one training of the fold (the ``rankstudy.uid`` tag);
logging the same training again keeps its run (and run id), updating it only if what
it shows changed, so rerunning other folds, or adding a report metric, leaves it in
place. A new training (or a rerun of a study report) first logs the complete new run
and only then deletes the earlier runs of the same key, so a failed rerun leaves
the previous run in place.

Metric names: MLflow only allows alphanumerics, ``_ - . / :`` and spaces in
metric and param names, so ``@`` is dropped (``test.ndcg@10`` is logged as ``test.ndcg10``: the
k shows in a narrow column, where ``test.ndcg_at_10`` showed as ``test.ndcg_at_``) and any other
disallowed character becomes ``_``; see :func:`mlflow_key`.

Order on a run's page: MLflow's UI lists a run's metrics in its overview table in the order the
store returns them, which is the order they were first logged: a fold run logs its training curves
(the ``history``) first. Its chart tab sorts them by name, after the sections of prefixed names
(``usage/...``): the time and memory behind a fold run are tags and an artifact, not metrics
(:mod:`rankstudy.tracking.usage`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from rankstudy.tracking import store  # first: it sets MLflow's environment defaults
from rankstudy.tracking.convergence import (
    DELETED_TAG,
    FINISHED,
    KEY_TAG,
    LEVEL_TAG,
    LOGGED_TAG,
    PARENT_TAG,
    confirm_parent,
    delete,
    logged_token,
    new_run_or_nothing,
    parent_key,
    parent_run_id,
    replace_parent,
    replace_runs,
    run_name,
    runs_with_key,
    unless_gone,
    write_to_settled_parent,
)
from rankstudy.tracking.store import fails_clearly_without_server, sqlite_path, tracking_lock
from rankstudy.tracking.usage import ARTIFACT as USAGE_ARTIFACT
from rankstudy.tracking.usage import split_history, usage_document, usage_tags

import pandas as pd
from mlflow.entities import Metric, Param, RunTag, ViewType
from mlflow.exceptions import MlflowException

REVISION_TAG = "rankstudy.revision"
UID_TAG = "rankstudy.uid"  # one training of a fold
CONTENT_TAG = "rankstudy.content"  # digest of what a fold run shows
FOLD_TAG = "rankstudy.fold_key"  # a nested run's fold, to purge what a killed call left deleted


# ---------------------------------------------------------------- names and values


def mlflow_key(name: str) -> str:
    """A metric/param name MLflow accepts: ``@`` dropped (``ndcg@10`` -> ``ndcg10``), other invalid
    chars -> ``_``."""
    return re.sub(r"[^/\w.\- :]", "_", str(name).replace("@", ""))


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


# A fold run's step-0 metrics in this order on its page (after its curves): the test metrics first
# (the plan's JSON has its keys sorted, so the order is made here)
PAGE_ORDER = ("test.", "vali.", "selection.", "", "random.", "std.")


def page_order(metrics: Mapping) -> dict:
    """``metrics`` in :data:`PAGE_ORDER` (by prefix; the rest in their order)."""
    def rank(name: str) -> int:
        return next((i for i, prefix in enumerate(PAGE_ORDER) if prefix and name.startswith(prefix)),
                    PAGE_ORDER.index(""))

    return dict(sorted(metrics.items(), key=lambda item: rank(item[0])))


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


def _log_payload(client, run_id: str, *, params=(), metrics=(), tags=(), artifacts=()) -> None:
    client.log_batch(run_id, metrics=list(metrics), params=list(params), tags=list(tags))
    for path in artifacts:
        if path.is_dir():
            client.log_artifacts(run_id, str(path), artifact_path=path.name)
        else:
            client.log_artifact(run_id, str(path))


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
    nested: Iterable[Mapping] = (),
    usage: Mapping[str, float | None] | None = None,
) -> str:
    """Log one fold as a child run of its (study, dataset, featureset, method) parent; returns its id.

    ``uid`` names one training of the fold. A live run of this fold with the same uid is
    kept (same run id): if what it shows changed (e.g. a metric added to the report) its
    step-0 metrics, tags and artifacts are updated in place, else nothing is written. Any
    other uid (or none) makes a new run that replaces the earlier runs of the fold, which
    are then purged from the store.
    ``metrics`` are logged at step 0, ``history`` entries at their own ``step`` (and first, so
    that the run's page opens on the training curves); ``start_time``/``end_time`` (ms since the
    epoch) are the fold job's, when given. ``nested`` (:func:`rankstudy.tracking.nested.nested_runs`:
    the fold's candidates) become runs nested under the fold run, logged with a new fold run and
    completed under a kept one; a replaced fold run's nested runs go with it.
    ``usage`` (the seconds and memory of the fold's jobs, ``{"train.wall_s": 2.1, ...}``) and the
    seconds of each step of ``history`` are tags and the artifact ``usage.json``, not metrics
    (:mod:`rankstudy.tracking.usage`).
    """
    paths = _check_artifacts(artifacts)
    history, step_seconds = split_history(history)
    usage = dict(usage or {})
    tags = {**(tags or {}), **usage_tags(usage)}
    document = usage_document(usage, step_seconds) if usage or step_seconds else None
    digest = _content_digest(params, metrics, tags, paths)
    timestamp = store.now_ms()
    key = f"{parent_key(study, dataset, featureset, method)}/fold{fold}"
    locked = sqlite_path(uri) is not None
    with tracking_lock(uri):
        client = store.client(uri)
        experiment_id = store.experiment_id(client, uri, experiment)
        deleted: list[str] = []
        parent_id = parent_run_id(client, experiment_id, study, dataset, featureset, method, deleted)
        # only a finished run of this training is kept: a run still RUNNING (or FAILED) is what a
        # call killed mid-log left (kill -9, a full disk), half logged; a new run replaces it
        same = [r for r in runs_with_key(client, experiment_id, key, "fold")
                if uid is not None and r.data.tags.get(UID_TAG) == uid and r.info.status == FINISHED]
        if same:
            run = same[-1]
            run_id = run.info.run_id
            if run.data.tags.get(CONTENT_TAG) != digest:
                _log_payload(client, run_id, metrics=_metric_entities(page_order(metrics), 0, timestamp),
                             tags=_tag_entities(tags), artifacts=paths)
                if document is not None:
                    client.log_dict(run_id, document, USAGE_ARTIFACT)
                # the digest last: an update that fails halfway is redone by the next run
                client.set_tag(run_id, CONTENT_TAG, digest)
                client.set_terminated(run_id, end_time=end_time)
            if run.data.tags.get(PARENT_TAG) != parent_id:  # its parent was replaced meanwhile
                client.set_tag(run_id, PARENT_TAG, parent_id)
        else:
            token = logged_token()
            run_tags = {KEY_TAG: key, LEVEL_TAG: "fold", PARENT_TAG: parent_id, "study": study, "dataset": dataset,
                        "featureset": featureset, "method": method, "fold": str(fold), CONTENT_TAG: digest,
                        LOGGED_TAG: token, **({UID_TAG: uid} if uid is not None else {})}
            run_id = client.create_run(experiment_id, start_time=start_time, tags=run_tags,
                                       run_name=run_name(study, dataset, featureset, method, fold)).info.run_id
            with new_run_or_nothing(client, uri, run_id, end_time=end_time):
                # the curves first: the UI lists a run's metrics in the order they were first logged
                curves = _history_entities(history, timestamp)
                _log_payload(client, run_id, params=_param_entities(params),
                             metrics=curves + _metric_entities(page_order(metrics), 0, timestamp),
                             tags=_tag_entities(tags), artifacts=paths)
                if document is not None:
                    client.log_dict(run_id, document, USAGE_ARTIFACT)
            run_id = replace_runs(client, experiment_id, key, "fold", run_id, token, deleted)
        identity = {"study": study, "dataset": dataset, "featureset": featureset, "method": method, "fold": str(fold)}
        _complete_nested(client, uri, experiment_id, run_id, key, identity, list(nested), deleted,
                         start_time=start_time, end_time=end_time)
        for replaced in list(deleted):  # the nested runs of a replaced fold run go with it
            deleted.extend(_delete_nested(client, experiment_id, replaced))
        # runs of this fold an earlier call deleted but could not purge (killed, disk full) go now;
        # runs a user deleted in the UI (no DELETED_TAG) stay for `mlflow gc`
        deleted.extend(r.info.run_id for r in store.search_all(
            client, experiment_id, store.filter_eq(**{KEY_TAG: key, LEVEL_TAG: "fold", DELETED_TAG: "true"}),
            view=ViewType.DELETED_ONLY))
        deleted.extend(r.info.run_id for r in store.search_all(
            client, experiment_id, store.filter_eq(**{FOLD_TAG: key, DELETED_TAG: "true"}), view=ViewType.DELETED_ONLY))
        if not locked:
            confirm_parent(client, experiment_id, study, dataset, featureset, method, run_id, parent_id, deleted)
        store.purge_runs(client, uri, deleted)
    return run_id


def _nested_runs_of(client, experiment_id: str, run_id: str) -> list:
    return [r for r in store.search_all(client, experiment_id, store.filter_eq(**{PARENT_TAG: run_id}))
            if r.data.tags.get(FOLD_TAG)]


def _delete_nested(client, experiment_id: str, run_id: str) -> list[str]:
    """Delete the live nested runs of fold run ``run_id``; returns their ids."""
    gone: list[str] = []
    for run in _nested_runs_of(client, experiment_id, run_id):
        delete(client, run.info.run_id, gone)
    return gone


def _complete_nested(client, uri: str, experiment_id: str, fold_run_id: str, fold_key: str, identity: Mapping,
                     nested: list[Mapping], deleted: list[str], *, start_time=None, end_time=None) -> None:
    """Make the live nested runs of ``fold_run_id`` exactly ``nested``: the first finished run of
    each key stays (oldest first: every client keeps the same one), the others (half logged by a
    killed call, duplicates, or no longer wanted) are deleted, and missing ones are logged."""
    wanted = {f"{fold_key}/{n['name']}": n for n in nested}
    kept: set[str] = set()
    for run in _nested_runs_of(client, experiment_id, fold_run_id):
        key = run.data.tags.get(KEY_TAG)
        if key in wanted and key not in kept and run.info.status == FINISHED:
            kept.add(key)
        else:
            delete(client, run.info.run_id, deleted)
    for key, run in wanted.items():
        if key in kept:
            continue
        tags = {KEY_TAG: key, LEVEL_TAG: run["level"], PARENT_TAG: fold_run_id, FOLD_TAG: fold_key, **identity}
        run_id = client.create_run(experiment_id, start_time=start_time, tags=tags,
                                   run_name=run_name(identity["study"], identity["dataset"], identity["featureset"],
                                                     identity["method"], identity["fold"], run["name"])).info.run_id
        with new_run_or_nothing(client, uri, run_id, end_time=end_time):
            now = store.now_ms()
            # a tuning trial's validation curve while it trained (a pruned one's ends where it stopped)
            curve = [Metric("vali.curve", float(value), now, int(step)) for step, value in run.get("curve") or ()]
            _log_payload(client, run_id, params=_param_entities(run.get("params")),
                         metrics=_metric_entities(run.get("metrics") or {}, 0, now) + curve,
                         tags=_tag_entities(run.get("tags")))


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
    params: Mapping | None = None,
    artifacts: Iterable[os.PathLike | str] = (),
    tags: Mapping | None = None,
) -> str:
    """Set the fold-mean metrics on the parent run (created if missing), and ``params`` (the
    method's settings, flattened as for a fold run) if it has none yet.

    MLflow cannot change a param, so a parent whose params differ from ``params`` (the settings
    changed since) is replaced by a new parent holding its children
    (:func:`~rankstudy.tracking.convergence.replace_parent`); its metric history starts again.

    Each call that changes what the parent shows logs all metrics at a new step (the parent's
    ``rankstudy.revision`` tag, 0, 1, 2, ...); a call that changes nothing writes nothing. So
    the value the UI lists for a metric is the one of the latest call, and the metric's chart
    shows one point per change. A metric left
    out of a later call keeps its old value (MLflow cannot delete metrics).
    Without a lock (a server) the parent is resolved again after the write, and the
    write repeated on the parent every client settles on if that is another one.
    Returns the parent's run id.
    """
    paths = _check_artifacts(artifacts)
    with tracking_lock(uri):
        client = store.client(uri)
        experiment_id = store.experiment_id(client, uri, experiment)
        deleted: list[str] = []

        wanted = {param.key: param.value for param in _param_entities(params)}

        def write(parent_id: str) -> bool:
            try:
                run = client.get_run(parent_id)
            except MlflowException:
                if store.is_live(client, parent_id):
                    raise
                return False  # deleted as a duplicate meanwhile: resolve again
            if wanted and run.data.params and run.data.params != wanted:
                replace_parent(client, experiment_id, study, dataset, featureset, method, parent_id, deleted)
                return False  # write to the new parent
            if not paths and shows_already(run, wanted, metrics, tags):
                return True  # the log_runs job relogs every method: an unchanged parent gets no new revision
            revision = int(run.data.tags.get(REVISION_TAG, -1)) + 1
            payload = dict(metrics=_metric_entities(page_order(metrics), revision, store.now_ms()),
                           params=[] if run.data.params else [Param(k, v) for k, v in wanted.items()],
                           tags=_tag_entities({**(tags or {}), REVISION_TAG: revision}), artifacts=paths)
            return (unless_gone(client, parent_id, _log_payload, client, parent_id, **payload)
                    and unless_gone(client, parent_id, client.set_terminated, parent_id))  # end_time: now

        parent_id = write_to_settled_parent(client, experiment_id, study, dataset, featureset, method, write,
                                            locked=sqlite_path(uri) is not None, deleted=deleted)
        store.purge_runs(client, uri, deleted)
    return parent_id


def shows_already(run, params: Mapping, metrics: Mapping, tags: Mapping | None) -> bool:
    """Whether a finished parent holds these params, latest metric values and tags already."""
    if run.info.status != FINISHED or (params and run.data.params != params):
        return False
    same = lambda a, b: a == b or (a != a and b != b)  # noqa: E731  NaN is NaN here
    return (all(same(run.data.metrics.get(m.key), m.value) for m in _metric_entities(metrics, 0, 0))
            and all(run.data.tags.get(t.key) == t.value for t in _tag_entities(tags)))


@fails_clearly_without_server
def log_method(uri: str, experiment: str, identity: Mapping[str, str], folds: Iterable[Mapping],
               parent: Mapping) -> tuple[str, dict]:
    """Log one method's fold runs (each a :func:`log_fold_run`'s keyword arguments, with ``fold``),
    then its parent (:func:`log_parent_metrics`'s, its settings ``params`` also as flattened
    tags); returns the parent's id and each fold's run id. Folds first: a parent holds the means
    of runs that exist."""
    fold_ids = {fold["fold"]: log_fold_run(uri, experiment, **identity, **fold) for fold in folds}
    tags = {**flatten_params(parent.get("params") or {}), **(parent.get("tags") or {})}
    parent_id = log_parent_metrics(uri, experiment, **identity, metrics=parent["metrics"],
                                   params=parent.get("params"), tags=tags)
    return parent_id, fold_ids


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
    token = logged_token()
    run_tags = {KEY_TAG: key, LEVEL_TAG: "study", "study": study, "dataset": dataset, LOGGED_TAG: token}
    with tracking_lock(uri):
        client = store.client(uri)
        experiment_id = store.experiment_id(client, uri, experiment)
        deleted: list[str] = []
        run_id = store.create_run(client, experiment_id, run_name(study, dataset, nested="tables"), run_tags)
        with new_run_or_nothing(client, uri, run_id):
            _log_payload(client, run_id, params=_param_entities(params),
                         tags=_tag_entities(tags), artifacts=paths)
        run_id = replace_runs(client, experiment_id, key, "study", run_id, token, deleted)
        store.purge_runs(client, uri, deleted)
    return run_id


FOLD_RUN_COLUMNS = ["run_id", "parent_run_id", "key", "study", "dataset", "featureset", "method",
                    "fold", "status", "start_time"]


@fails_clearly_without_server
def fold_runs(uri: str, experiment: str) -> pd.DataFrame:
    """Live fold runs of ``experiment``: one row per run with its key tags, plus one
    ``metrics.<mlflow key>`` column per (latest) metric value. Empty if none."""
    with tracking_lock(uri):  # first use of a fresh SQLite file creates the schema
        client = store.client(uri)
        experiment_obj = client.get_experiment_by_name(experiment)
        if experiment_obj is None or experiment_obj.lifecycle_stage == "deleted":
            return pd.DataFrame(columns=FOLD_RUN_COLUMNS)
        runs = store.search_all(client, experiment_obj.experiment_id, store.filter_eq(**{LEVEL_TAG: "fold"}))
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
    "flatten_params",
    "fold_runs",
    "log_fold_run",
    "log_parent_metrics",
    "log_study_run",
    "mlflow_key",
    "run_name",
]
