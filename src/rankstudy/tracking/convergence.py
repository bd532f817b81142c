"""How concurrent writers of one run key end with exactly one run, without a shared lock.

With an SQLite store every logging call holds one ``flock`` (:func:`store.tracking_lock`), so
calls never overlap and these rules reduce to plain get-or-create and replace. A tracking server
(or any other store) has no lock that all clients share, and its HTTP client retries a request
that failed, which may have created a run after all; there every step is made convergent
instead, by one order that all clients agree on whatever each of them saw:

* parents: the oldest live parent of a key wins (start time, then run id; the order of
  :func:`store.search_all`). Whoever sees younger duplicates deletes them and moves their
  children to the winner (:func:`parent_run_id`), and every job checks after its last write
  that its parent is still the winner, and moves its child (:func:`confirm_parent`) or logs its
  means again (:func:`write_to_settled_parent`) if not. Nobody deletes the oldest parent, so
  all clients settle on the same one. Whoever attaches a child to a parent that is being
  deleted either has it moved by the deleter (attached before the deleter looked for children)
  or sees the deletion in its check (attached after), so no child stays under a deleted parent.
  One exception: a parent whose params (the method's settings, which MLflow cannot change)
  differ from the settings being logged is replaced (:func:`replace_parent`): deleted, then a
  new parent resolved as above, then its children moved to that one. Two pipelines logging one
  key with different settings at once would replace each other's parent until
  :data:`SETTLE_ROUNDS` runs out; with the same settings they settle as above.
* fold and study runs: the run logged last wins (the ``rankstudy.logged`` tag, ms and a token
  per call, then run id; :func:`_logged_order`). After finishing its run a job deletes every
  live run of its key older than the newest finished one, its own included if a newer one
  exists; runs newer than that and still being logged are left to their own job; retried
  creations of its own call (same token) are always deleted (:func:`replace_runs`). Of two
  concurrent loggers of one key at least the later one sees the other, so exactly the newest
  finished run survives and nothing is deleted by both.
* a run that fails while being logged is marked FAILED, deleted and purged
  (:func:`new_run_or_nothing`), and replacing starts only once the new run is complete, so a
  failed rerun leaves the previous run in place.

Deleting a run another client deleted (or purged) meanwhile is not an error (:func:`delete`,
:func:`unless_gone`); every deleted run is then purged (:func:`store.purge_runs`). A deleted run
carries ``rankstudy.deleted``, so the next logging of its fold purges it if this call could not
(killed, a full disk), while a run a user deleted in the UI stays for ``mlflow gc``.

In a pipeline run each key is logged by one job (every run of a (study, dataset) by its
``log_runs`` job), so these rules matter for retried requests and for two pipelines logging the same keys to one server
at the same time.

Tested: without a lock against a tracking server on PostgreSQL (``tests/test_tracking_server_e2e.py``:
8 processes released together into one parent none of them finds and two per fold,
``test_concurrent_clients_converge_on_one_parent_and_one_run_per_fold``; the pipeline with 8
jobs, ``test_one_run_per_fold_and_method_with_parents``; a rerun's replaced runs purged,
``test_a_rerun_purges_the_runs_it_replaces``), and with SQLite's lock (``tests/test_tracking.py``:
8 processes on a fresh store, ``test_parallel_jobs_on_a_fresh_store_lose_nothing``; replacing,
``test_rerunning_a_fold_replaces_its_run``, ``test_study_run_is_replaced_on_rerun``,
``test_failed_rerun_keeps_the_earlier_run``; and against an ``mlflow server`` on SQLite,
``test_logging_to_a_tracking_server``).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator

from rankstudy.tracking import store  # first: it sets MLflow's environment defaults

from mlflow.entities import RunStatus
from mlflow.exceptions import MlflowException

log = logging.getLogger(__name__)

KEY_TAG = "rankstudy.key"
LEVEL_TAG = "rankstudy.level"
LOGGED_TAG = "rankstudy.logged"  # "<ms>.<token>": when and by which call a fold or study run was logged
DELETED_TAG = "rankstudy.deleted"  # deleted by a logging call (replaced, duplicate, failed), to be purged
PARENT_TAG = "mlflow.parentRunId"
FINISHED = RunStatus.to_string(RunStatus.FINISHED)
SETTLE_ROUNDS = 10  # a parent settles in one or two rounds; more means something else is wrong


def runs_with_key(client, experiment_id: str, key: str, level: str) -> list:
    """The live runs of one key, oldest first."""
    return store.search_all(client, experiment_id, store.filter_eq(**{KEY_TAG: key, LEVEL_TAG: level}))


def unless_gone(client, run_id: str, action, *args, **kwargs) -> bool:
    """``action(*args, **kwargs)``; False instead of an error if the run was deleted
    (or purged) meanwhile by another client settling duplicates."""
    try:
        action(*args, **kwargs)
    except MlflowException:
        if store.is_live(client, run_id):
            raise
        return False
    return True


def _has_tag(client, run_id: str, key: str, value: str) -> bool:
    try:
        return client.get_run(run_id).data.tags.get(key) == value
    except MlflowException:
        return False


def delete(client, run_id: str, deleted: list[str]) -> None:
    """Soft-delete a run (and note it for :func:`store.purge_runs`); one already purged is fine.
    The run is first marked as deleted by rankstudy (:data:`DELETED_TAG`), so that a later call
    purges it if this one cannot, while runs a user deleted in the UI stay for ``mlflow gc``."""
    try:
        client.set_tag(run_id, DELETED_TAG, "true")
    except MlflowException:
        if not store.is_live(client, run_id):
            return  # another client deleted (or purged) it meanwhile, and purges it
        if not _has_tag(client, run_id, DELETED_TAG, "true"):
            raise
        # Another client set the tag at the same moment (a SQL store then refuses the
        # second insert as a duplicate key): the run is being deleted either way.
    try:
        client.delete_run(run_id)
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return
        raise
    deleted.append(run_id)


# ---------------------------------------------------------------- fold and study runs: newest finished wins


def logged_token() -> str:
    """Names one logging call: ms since the epoch (the order of calls) and a random part."""
    return f"{store.now_ms()}.{uuid.uuid4().hex[:12]}"


def _logged_order(run) -> tuple[int, str]:
    """The order of the fold (or study) runs of one key: when they were logged, then run id.
    Runs logged before the tag existed count from their start time."""
    ms = run.data.tags.get(LOGGED_TAG, "").partition(".")[0]
    return (int(ms) if ms.isdigit() else int(run.info.start_time or 0), run.info.run_id)


def replace_runs(client, experiment_id: str, key: str, level: str, new_run_id: str,
                 token: str, deleted: list[str]) -> str:
    """Settle the live runs of ``key`` once ``new_run_id`` is logged and finished; returns
    the run that stays: the newest finished one (:func:`_logged_order`), normally ours.

    Runs older than it are deleted (ours too, if another client logged a newer one);
    newer runs that are still being logged are left to their own job, which settles
    after it finished; runs of this call (``token``: a creation the HTTP client retried)
    always go. Deleted ids are added to ``deleted``.
    """
    runs = runs_with_key(client, experiment_id, key, level)
    finished = [run for run in runs if run.info.status == FINISHED or run.info.run_id == new_run_id]
    if not finished:  # ours was replaced by a newer run meanwhile, and that one failed
        return new_run_id
    keep = max(finished, key=_logged_order)
    for run in runs:
        if run.info.run_id == keep.info.run_id:
            continue
        if run.data.tags.get(LOGGED_TAG) == token or _logged_order(run) < _logged_order(keep):
            delete(client, run.info.run_id, deleted)
    return keep.info.run_id


@contextlib.contextmanager
def new_run_or_nothing(client, uri: str, run_id: str, end_time: int | None = None) -> Iterator[None]:
    """Mark the run FINISHED on success; on failure mark it FAILED, delete and purge it,
    so a half-logged run never replaces a complete earlier one."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            client.set_terminated(run_id, status=RunStatus.to_string(RunStatus.FAILED))
        with contextlib.suppress(Exception):
            client.set_tag(run_id, DELETED_TAG, "true")
            client.delete_run(run_id)
            store.purge_runs(client, uri, [run_id])
        raise
    client.set_terminated(run_id, status=FINISHED, end_time=end_time)


# ---------------------------------------------------------------- parents: oldest live wins


def parent_key(study: str, dataset: str, featureset: str, method: str) -> str:
    return f"{study}/{dataset}/{featureset}/{method}"


def run_name(study: str, dataset: str, featureset: str = "", method: str = "", fold=None, nested: str = "") -> str:
    """``default: ranknet [first] MQ2008 fold1``: the study first, as the runs table cuts names."""
    what = f"{method} [{featureset}] {dataset}" if method else dataset
    return f"{study}: {what}" + (f" fold{fold}" if fold is not None else "") + (f" {nested}" if nested else "")


def parent_run_id(client, experiment_id: str, study: str, dataset: str, featureset: str, method: str,
                  deleted: list[str]) -> str:
    """Get or create the parent run of (study, dataset, featureset, method).

    The oldest live parent of the key wins; younger ones (created at the same time by
    clients that share no lock, or by a retried request) are deleted here, into
    ``deleted``, and their children moved to the winner.
    """
    key = parent_key(study, dataset, featureset, method)
    parents = runs_with_key(client, experiment_id, key, "parent")
    if not parents:
        tags = {KEY_TAG: key, LEVEL_TAG: "parent", "study": study, "dataset": dataset,
                "featureset": featureset, "method": method}
        run_id = store.create_run(client, experiment_id, run_name(study, dataset, featureset, method), tags)
        # A parent spans many jobs; FINISHED keeps the UI from showing it as running forever.
        unless_gone(client, run_id, client.set_terminated, run_id)
        parents = runs_with_key(client, experiment_id, key, "parent")
        if not parents:  # cannot happen: nobody deletes the oldest parent
            return run_id
    winner = parents[0].info.run_id
    for run in parents[1:]:
        delete(client, run.info.run_id, deleted)
        move_children(client, experiment_id, run.info.run_id, winner)
    return winner


def move_children(client, experiment_id: str, old_id: str, new_id: str) -> None:
    """Attach every child of parent ``old_id`` to ``new_id`` (a child deleted meanwhile is skipped)."""
    for child in store.search_all(client, experiment_id, store.filter_eq(**{PARENT_TAG: old_id})):
        unless_gone(client, child.info.run_id, client.set_tag, child.info.run_id, PARENT_TAG, new_id)


def replace_parent(client, experiment_id: str, study: str, dataset: str, featureset: str, method: str,
                   old_id: str, deleted: list[str]) -> str:
    """Replace the parent ``old_id`` (its settings changed: MLflow params cannot): delete it, resolve
    the parent again (a new one, or one another client made meanwhile) and move the old one's
    children there. Deleting before looking for children means a child attached meanwhile is
    either found here or sees the deletion in its own :func:`confirm_parent`. Returns the new id."""
    delete(client, old_id, deleted)
    new_id = parent_run_id(client, experiment_id, study, dataset, featureset, method, deleted)
    move_children(client, experiment_id, old_id, new_id)
    return new_id


def confirm_parent(client, experiment_id: str, study: str, dataset: str, featureset: str, method: str,
                   child_id: str, parent_id: str, deleted: list[str]) -> str:
    """After a child was attached to ``parent_id`` without a lock: resolve the parent again
    and move the child until the parent it names is the one every client settles on."""
    for _ in range(SETTLE_ROUNDS):
        winner = parent_run_id(client, experiment_id, study, dataset, featureset, method, deleted)
        if winner == parent_id:
            return winner
        unless_gone(client, child_id, client.set_tag, child_id, PARENT_TAG, winner)
        parent_id = winner
    log.warning("parent run of %s did not settle in %d rounds", parent_key(study, dataset, featureset, method),
                SETTLE_ROUNDS)
    return parent_id


def write_to_settled_parent(client, experiment_id: str, study: str, dataset: str, featureset: str, method: str,
                            write: Callable[[str], bool], *, locked: bool, deleted: list[str]) -> str:
    """``write(parent_id)`` on the parent every client settles on; returns its id.

    ``write`` returns False if that parent was deleted meanwhile (a younger duplicate). Under a
    lock one successful write is enough; without one the parent is resolved again after the
    write, and the write repeated on the winner if that is another run.
    """
    written = None
    for _ in range(SETTLE_ROUNDS):
        parent_id = parent_run_id(client, experiment_id, study, dataset, featureset, method, deleted)
        if parent_id == written:
            break
        if write(parent_id):
            written = parent_id
        if locked and written:
            break
    else:
        log.warning("the means of %s were not confirmed on a settled parent run after %d rounds",
                    parent_key(study, dataset, featureset, method), SETTLE_ROUNDS)
    return parent_id
