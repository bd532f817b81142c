"""Running one pipeline step inside a Snakemake job: its output goes to the job's log, and
the errors a user can fix (bad data, bad config, missing data set, a damaged file, a folder it
cannot write, a full disk, too little memory) end the job with one clear line on the console
instead of a traceback. Snakemake removes a failed job's outputs, so the next run redoes the job."""

from __future__ import annotations

import errno
import os
import shutil
import sys
import time
from contextlib import contextmanager, suppress
from pathlib import Path

from rankstudy.pipeline.errors import user_errors
from rankstudy.util.lifeline import end_with_snakemake
from rankstudy.util.memory import memory_symptom, out_of_memory_message
from rankstudy.util.threads import use_job_threads


class _Tee:
    """A text stream writing to several files (the attempt's log and the log of every attempt)."""

    def __init__(self, *files) -> None:
        self.files = files

    def write(self, text: str) -> int:
        for f in self.files:
            f.write(text)
        return len(text)

    def flush(self) -> None:
        for f in self.files:
            f.flush()


def attempts_log(log_path: Path) -> Path:
    """Where a job's every attempt is logged, beside its log (``X.log`` -> ``X.attempts.log``)."""
    return log_path.with_name(f"{log_path.stem}.attempts.log")


@contextmanager
def job_logging(snakemake, name: str, keep_attempts: bool = False):
    """The job's output into its log, and its errors a user can fix as one console line. Snakemake
    deletes a job's log before running it again; with ``keep_attempts`` (the tuning jobs, whose
    study outlives an attempt killed midway) every attempt is also appended to
    :func:`attempts_log`, which Snakemake does not own."""
    console = sys.stderr
    log_path = Path(snakemake.log[0]) if snakemake.log else None
    if log_path:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "w", buffering=1) if log_path else None
    attempts = open(attempts_log(log_path), "a", buffering=1) if log and keep_attempts else None
    if log:
        sys.stdout = sys.stderr = _Tee(log, attempts) if attempts else log
    if attempts:
        print(f"[{name}] attempt at {time.strftime('%Y-%m-%d %H:%M:%S')}, pid {os.getpid()}")
    end_with_snakemake()  # killed with SIGKILL, Snakemake cannot stop its jobs: they stop themselves
    start = time.perf_counter()
    threads = use_job_threads(getattr(snakemake, "threads", 1))
    print(f"[{name}] wildcards: {dict(snakemake.wildcards)}, threads: {threads}")
    try:
        yield
        print(f"[{name}] done in {time.perf_counter() - start:.2f} s")
    except Exception as exc:
        # a full disk or too little memory first: knowing the user errors means importing modules
        if (message := resource_message(exc, snakemake, name)) is None:
            if not isinstance(exc, user_errors()):
                raise
            message = str(exc)
            if isinstance(exc, PermissionError):
                message = (f"cannot write {exc.filename or 'an output'}: permission denied; make its folder "
                           f"writable and run again (the job's outputs were removed, so it runs again)")
        with suppress(OSError):  # the log may be on the full disk
            print(f"[{name}] error: {message}")
        # the log names data files as {data_root}/... (no machine's paths in results); the console
        # line is for the person at this machine: the real path
        data_root = (getattr(snakemake, "config", None) or {}).get("data_root")
        shown = message.replace("{data_root}", str(Path(data_root).resolve())) if data_root else message
        print(f"rankstudy {name}: {shown}", file=console)
        raise SystemExit(1) from None
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, console
        for f in (log, attempts):
            if f:
                with suppress(OSError):  # flushing onto a full disk
                    f.close()


def resource_message(exc: Exception, snakemake, name: str) -> str | None:
    """One line naming the resource when ``exc`` is a full disk or too little memory; None for
    any other error (which goes on with its traceback)."""
    if (full := no_space(exc)) is not None:
        return no_space_message(full, snakemake)
    if isinstance(exc, (MemoryError, OSError, ImportError, RuntimeError)) and memory_symptom(exc) is not None:
        return out_of_memory_message(f"the {name} job", exc, getattr(snakemake, "rule", name),
                                     getattr(getattr(snakemake, "resources", None), "mem_mb", None))
    return None


# SQLite's words for a full disk (SQLITE_FULL), which it raises without an errno or a file name
_SQLITE_FULL = "database or disk is full"


def no_space(exc: BaseException) -> OSError | None:
    """The "no space left on device" (or "disk quota exceeded") error behind ``exc``, if any:
    libraries often raise their own error while handling it (a chain of tracebacks). SQLite's
    "database or disk is full" (the MLflow store, under SQLAlchemy's and MLflow's errors) is one
    too, returned as an ENOSPC without a file name."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return exc
        if type(exc).__module__ == "sqlite3" and _SQLITE_FULL in str(exc):
            return OSError(errno.ENOSPC, _SQLITE_FULL)
        exc = exc.__cause__ or exc.__context__
    return None


def _sqlite_store(snakemake) -> Path | None:
    """The job's MLflow store when it is an SQLite file (the tracking URI as the job resolves it)."""
    from rankstudy.tracking.store import resolve_tracking_uri, sqlite_path

    mlflow = (getattr(snakemake, "config", None) or {}).get("mlflow") or {}
    return sqlite_path(resolve_tracking_uri(mlflow.get("tracking_uri"), "results"))


def no_space_message(exc: OSError, snakemake) -> str:
    """One line naming what could not be written, the device's free space and what to do."""
    outputs = list(getattr(snakemake, "output", None) or [])
    store = _sqlite_store(snakemake) if exc.strerror == _SQLITE_FULL and not exc.filename else None
    where = Path(exc.filename or store or (outputs[0] if outputs else "results"))
    real = where.resolve()  # a symlinked store: the free space of the device it is on
    folder = next((p for p in [real, *real.parents] if p.is_dir()), Path("."))
    free = shutil.disk_usage(folder).free / 2**20
    what = "disk quota exceeded" if exc.errno == errno.EDQUOT else "no space left on the device"
    return (f"cannot write {where}: {what} ({free:.0f} MB free in {folder}); free some space and run "
            f"again (the job's outputs were removed, so it runs again)")
