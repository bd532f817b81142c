"""A job ends with the Snakemake that started it. Snakemake runs a job as ``bash -c '...'`` under
its own process; killed with SIGKILL it cannot stop them, and its jobs go on as orphans: a
tuning worker kept running trials while the rerun started two more workers on the same study.
:func:`end_with_snakemake` watches the nearest ancestor whose command line is Snakemake's (its
pid and start time, so a reused pid is not taken for it) from a daemon thread, and ends this
process when it is gone. A job's outputs are written atomically, so nothing is left half-written;
a tuning trial it was running is then found lost (its process is dead). Under SLURM the nearest
Snakemake is the one inside the cluster job, which lives as long as the job. Linux only (/proc);
elsewhere nothing is watched."""

from __future__ import annotations

import os
import sys
import threading
import time

POLL_SECONDS = 2.0
MAX_DEPTH = 4  # python <- bash -c <- snakemake: the job's shell is one or two levels up


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time in clock ticks) of ``pid`` from /proc, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # the name (in parentheses) may hold spaces
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[19]


def _argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def is_snakemake(argv: list[str]) -> bool:
    """``snakemake ...``, ``python .../bin/snakemake ...`` (a script's interpreter comes first) or
    ``python -m snakemake ...``."""
    head = argv[:3]
    return any(os.path.basename(a) == "snakemake" for a in head) or "-m snakemake" in " ".join(head)


def snakemake_ancestor(pid: int | None = None, max_depth: int = MAX_DEPTH) -> tuple[int, str] | None:
    """(pid, start time) of the nearest ancestor of ``pid`` (this process) running Snakemake."""
    stat = _stat(pid or os.getpid())
    for _ in range(max_depth):
        if stat is None or stat[0] <= 1:
            return None
        parent = stat[0]
        stat = _stat(parent)
        if stat is not None and is_snakemake(_argv(parent)):
            return parent, stat[1]
    return None


def end_with_snakemake(poll: float = POLL_SECONDS) -> threading.Thread | None:
    """Start the watch (a daemon thread) when a Snakemake is among this process's ancestors."""
    found = snakemake_ancestor()
    if found is None:
        return None
    pid, started = found

    def watch() -> None:
        while True:
            time.sleep(poll)
            stat = _stat(pid)
            if stat is None or stat[1] != started:
                try:  # in the job's log (stdout) and on the terminal, if it is still there
                    line = f"rankstudy: the Snakemake that started this job (pid {pid}) is gone: the job stops"
                    for stream in dict.fromkeys([sys.stdout, sys.__stderr__]):
                        print(line, file=stream, flush=True)
                finally:
                    os._exit(1)

    thread = threading.Thread(target=watch, daemon=True, name="end-with-snakemake")
    thread.start()
    return thread
