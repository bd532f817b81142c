"""Where a tuning study lives: Optuna's journal file (one machine) or a database (a PostgreSQL URL
under SLURM), opened with bounded retries. A journal is a file of JSON lines a crash or a full
disk can damage, and a user can delete: a line cut mid-write is repaired under the journal's lock
(what it held is kept beside it), and a journal deleted or replaced while a study runs is said in
one line naming it, not as Optuna's JSONDecodeError. URLs are shown without their password,
whatever form it takes (``user:pw@host``, ``?password=pw``)."""

from __future__ import annotations

import json
import os
import re
import time
import traceback
import warnings
from collections.abc import Callable
from urllib.parse import unquote

STORAGE_ATTEMPTS = 3  # opening the storage: tries, 1 s then 2 s apart, before one line names it
HEARTBEAT_SECONDS = 20  # a running trial says it is alive this often ...
STALE_SECONDS = 120  # ... and counts as lost when it has not for this long (a worker on another host)
LOCK_GRACE_SECONDS = 30  # a journal's lock unchanged this long is a dead writer's (Optuna's default)
# libpq's and SQLAlchemy's query-string spellings of a password
_QUERY_PASSWORD = re.compile(r"(?i)([?&;](?:password|passwd|pwd)=)([^&;#\s]*)")
_OP = b'{"op_code"'  # how Optuna's journal writes every operation (json.dumps of a dict, op_code first)


class StorageError(RuntimeError):
    """The tuning storage could not be opened or used (unreachable, locked, damaged, deleted):
    one line naming it."""


def passwords(url: str) -> list[str]:
    """The passwords a storage URL holds (as written and unquoted), in any of its forms."""
    found = [m.group(2) for m in _QUERY_PASSWORD.finditer(url) if m.group(2)]
    if "://" in url:
        netloc = url.split("://", 1)[1].split("/", 1)[0]
        if "@" in netloc and ":" in netloc.rsplit("@", 1)[0]:
            found.append(netloc.rsplit("@", 1)[0].split(":", 1)[1])
    return [p for pw in found for p in dict.fromkeys([pw, unquote(pw)]) if p]


def shown_storage(storage: str) -> str:
    """A storage URL without its password, for messages."""
    shown = _QUERY_PASSWORD.sub(lambda m: f"{m.group(1)}***" if m.group(2) else m.group(0), storage)
    if "://" in shown:
        scheme, rest = shown.split("://", 1)
        netloc, _, path = rest.partition("/")
        if "@" in netloc:
            credentials, host = netloc.rsplit("@", 1)
            if ":" in credentials:
                netloc = f"{credentials.split(':')[0]}:***@{host}"
        shown = f"{scheme}://{netloc}" + (f"/{path}" if path or rest.endswith("/") else "")
    return shown


def masked(text: str, storage: str) -> str:
    """``text`` (an error's message) with every password of ``storage`` replaced by ***."""
    for secret in sorted(passwords(storage), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def is_journal(storage: str) -> bool:
    return "://" not in storage


def _salvage(line: bytes) -> bytes | None:
    """A damaged journal line's last whole operation: a write cut mid-line by a crash and the next
    process's write appended to it make one line ``<cut op><whole op>``; None if none parses."""
    start = line.rfind(_OP)
    while start > 0:
        try:
            json.loads(line[start:])
            return line[start:]
        except ValueError:
            start = line.rfind(_OP, 0, start)
    return None


def journal_lock(path: str):
    """The lock Optuna's JournalFileBackend takes (a symlink beside the journal), on the journal's
    absolute path: a worker killed while it held the lock (kill -9, or the end-with-Snakemake
    watch) leaves the link, and Optuna releases it after LOCK_GRACE_SECONDS without a write by
    reading the time of the link's target, which a relative target (resolved from the link's
    folder, not the working one) never gives: a rerun then waited for ever."""
    from optuna.storages.journal import JournalFileSymlinkLock

    return JournalFileSymlinkLock(os.path.abspath(path), grace_period=LOCK_GRACE_SECONDS)


def repair_journal(path: str, say: Callable[[str], None] = print) -> None:
    """Mend a journal a crash or a full disk left damaged, under its lock (no worker writes then):
    a last line cut mid-write is dropped, a cut operation run into the next one is dropped from
    its line, and from a line that cannot be read at all the rest is set aside. What is removed is
    kept in ``<path>.damaged-<time>``; every whole operation before it stays."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    lock = journal_lock(path)
    lock.acquire()
    try:
        with open(path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")  # the last item: what follows the last newline (b"" when whole)
        kept, removed, mended, cut_at = [], [], 0, None
        for number, line in enumerate(lines[:-1], 1):
            try:
                json.loads(line)
                kept.append(line)
                continue
            except ValueError:
                pass
            whole = _salvage(line)
            if whole is None:  # nothing to read from here on: set the rest aside
                cut_at = number
                removed.append(b"\n".join(lines[number - 1:]))
                break
            kept.append(whole)
            removed.append(line[: len(line) - len(whole)])
            mended += 1
        else:
            if lines[-1]:
                removed.append(lines[-1])
        if not removed:
            return
        backup = f"{path}.damaged-{time.strftime('%Y%m%d-%H%M%S')}"
        with open(backup, "wb") as f:
            f.write(b"\n".join(removed))
        body = b"".join(line + b"\n" for line in kept)
        with open(path, "r+b") as f:  # in place: other workers open the same file (inode) by its path
            f.write(body)
            f.truncate()
            f.flush()
            os.fsync(f.fileno())
    finally:
        lock.release()
    what = []
    if mended:
        what.append(f"{mended} operation(s) cut mid-write by a crash")
    if cut_at is not None:
        what.append(f"everything from line {cut_at} on (it is not JSON)")
    elif lines[-1]:
        what.append("a last line cut mid-write")
    say(f"tuning: repaired the journal {path}: removed {' and '.join(what)}, kept in {backup}; "
        f"its {len(kept)} whole operations are kept, and a trial they leave unfinished runs again")


class JournalWatch:
    """The journal file a study opened, by device and inode: :meth:`check` says in one line when it
    was deleted or replaced since (Optuna would recreate it and fail on the offsets it remembers)."""

    def __init__(self, path: str) -> None:
        self.path = path
        st = os.stat(path)
        self.identity = (st.st_dev, st.st_ino)

    def problem(self) -> str | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return "was deleted"
        if (st.st_dev, st.st_ino) != self.identity:
            return "was replaced by another file"
        return None

    def check(self) -> None:
        if (problem := self.problem()) is not None:
            raise StorageError(f"the tuning journal {self.path} {problem} while the study ran; the trials it held "
                               f"are gone (this job stops without choosing a model): run again to start the "
                               f"method's tuning afresh")

    def explain(self, exc: BaseException) -> None:
        """StorageError for an error Optuna's journal code raised (a damaged or vanished file)."""
        from optuna.exceptions import OptunaError

        if isinstance(exc, OptunaError):  # Optuna's own account of the study, not of the file
            return
        frames = traceback.extract_tb(exc.__traceback__)
        if not any("optuna" in f.filename and "journal" in f.filename for f in frames):
            return
        self.check()
        raise StorageError(f"the tuning journal {self.path} could not be read ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}); another process may have written "
                           f"it while this one did: run again (a cut line is repaired at the start)") from None


def lost_line(trial) -> str:
    """What is said of a running trial found lost (its worker gone)."""
    return f"tuning: trial {trial.number + 1} was lost (its worker {trial.user_attrs.get('worker')} stopped)"


def open_storage(storage: str, say: Callable[[str], None] = print):
    """An Optuna storage: a database URL (``postgresql://...``, ``sqlite:///...``) or a journal
    file's path (repaired first, :func:`repair_journal`). Tried :data:`STORAGE_ATTEMPTS` times;
    then StorageError names it (its password hidden)."""
    import optuna

    problem = None
    for attempt in range(STORAGE_ATTEMPTS):
        try:
            if not is_journal(storage):
                # Optuna's own heartbeat: study.optimize records it, and fails a trial whose worker
                # stopped beating at the next trial's start (the journal has none: tuning.py's own)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    return optuna.storages.RDBStorage(storage, engine_kwargs={"pool_pre_ping": True},
                                                      heartbeat_interval=HEARTBEAT_SECONDS, grace_period=STALE_SECONDS,
                                                      heartbeat_stale_trial_callback=lambda _, trial: say(lost_line(trial)))
            from optuna.storages.journal import JournalFileBackend

            os.makedirs(os.path.dirname(os.path.abspath(storage)), exist_ok=True)
            repair_journal(storage, say)
            journal = optuna.storages.JournalStorage(JournalFileBackend(storage, lock_obj=journal_lock(storage)))
            journal.get_all_studies()  # reads the file now: a locked or unreadable one fails here
            return journal
        except Exception as exc:  # SQLAlchemy's, the OS's: said in one line below
            problem = masked(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", storage)
            if attempt + 1 < STORAGE_ATTEMPTS:
                time.sleep(2 ** attempt)
    raise StorageError(f"tuning storage {shown_storage(storage)} could not be opened after {STORAGE_ATTEMPTS} "
                       f"attempts ({problem}); check the tune.storage setting or the file's folder")
