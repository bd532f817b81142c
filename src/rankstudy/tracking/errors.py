"""The tracking errors a user can act on, and the check that raises one before any job;
importable without MLflow (every job imports them, and the Snakefile at start)."""

from __future__ import annotations

import os
import socket
import urllib.error
import urllib.request


class TrackingUnavailable(RuntimeError):
    """The tracking server does not answer; the message says how to start it again."""


class StoreLocked(TrackingUnavailable):
    """Another process held the SQLite store's write lock longer than the logging call waits."""


def store_locked(db, waited: float) -> StoreLocked:
    """The error for SQLite store ``db`` still locked after ``waited`` seconds of retries."""
    return StoreLocked(
        f"the MLflow store {db} stayed locked by another process for {waited:.0f} s (an `mlflow ui` or "
        f"`sqlite3` session writing to it?); end that process, or wait, then rerun: nothing is lost, the next "
        f"run logs what this one could not (RANKSTUDY_MLFLOW_LOCK_WAIT sets the wait in seconds)")


def server_unavailable(uri: str, detail: str) -> TrackingUnavailable:
    """The error for server ``uri`` not answering (``detail``: what the request said)."""
    # the way back to the local store: undo whichever set the server (the variable wins)
    local = ("unset MLFLOW_TRACKING_URI" if os.environ.get("MLFLOW_TRACKING_URI", "").strip()
             else "set config key mlflow.tracking_uri to null")
    return TrackingUnavailable(
        f"the MLflow tracking server {uri} does not answer ({detail.splitlines()[0][:200] if detail else ''}); "
        f"start it again with: eval \"$(bash setup/cluster/mlflow-server.sh start)\" (or {local} "
        f"for the local SQLite store), then rerun: nothing is lost, the next run logs what this one could not")


def check_server_answers(uri: str, timeout: float = 5.0) -> None:
    """Before any job: TrackingUnavailable unless the tracking server ``uri`` (http or https)
    answers. Any HTTP answer counts (a proxy's 401 too); only no answer at all fails. Other
    stores (SQLite, a database URI) are not checked here."""
    if not uri.startswith(("http://", "https://")):
        return
    try:
        urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=timeout).close()
    except urllib.error.HTTPError:
        return  # it answered
    except (urllib.error.URLError, OSError, socket.timeout) as exc:
        raise server_unavailable(uri, str(getattr(exc, "reason", exc))) from None
