"""Running one pipeline step inside a Snakemake job: its output goes to the job's log, and
the errors a user can fix (bad data, bad config, missing data set) end the job with one clear
line on the console instead of a traceback."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path

from rankstudy.pipeline.errors import USER_ERRORS
from rankstudy.util.threads import use_job_threads


@contextmanager
def job_logging(snakemake, name: str):
    console = sys.stderr
    log_path = Path(snakemake.log[0]) if snakemake.log else None
    if log_path:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "w", buffering=1) if log_path else None
    if log:
        sys.stdout = sys.stderr = log
    start = time.perf_counter()
    threads = use_job_threads(getattr(snakemake, "threads", 1))
    print(f"[{name}] wildcards: {dict(snakemake.wildcards)}, threads: {threads}")
    try:
        yield
        print(f"[{name}] done in {time.perf_counter() - start:.2f} s")
    except USER_ERRORS as exc:
        print(f"[{name}] error: {exc}")
        print(f"rankstudy {name}: {exc}", file=console)
        raise SystemExit(1) from None
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, console
        if log:
            log.close()
