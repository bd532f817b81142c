"""One pending re-evaluation timer in Snakemake's scheduler, not one more per finished job.

Snakemake 9's scheduler (``JobScheduler._schedule_reevalutation``, with its default
``--max-jobs-per-timespan 100/1s``) starts a 1-s ``threading.Timer`` on every pass of its loop,
and each timer, when it fires, wakes the loop for another pass, which starts another timer. A
finished job wakes the loop too: every job adds a chain of timers that never ends. On the default
study (2 cores, one fold) Snakemake held 26 threads after 21 jobs, each with its stack and malloc
arena reserved; under ``ulimit -v 1048576`` it stopped with "can't start new thread" after a few
jobs (snakemake/snakemake#3804 is the same pile-up at 10000 jobs). A timer already pending wakes
the loop within the same timespan, so a second one adds nothing: it is not started.

The one private name of a tool this project still touches (issue 44.3), kept on purpose: Snakemake
9.27.1 (the newest release, 2026-10) has no public way around it. ``--max-jobs-per-timespan`` only
changes the delay (every value keeps a timer per pass, so one chain per finished job either way),
and the scheduler plugins choose jobs, not the loop's wake-ups. Without the patch a leaderboard's
thousands of jobs leave as many 1-s timer chains waking the scheduler. When Snakemake stops
starting a timer per pass, drop this module: tests/test_faults.py checks that the method it
replaces still exists, and fails when it is gone.
tests/test_public_apis.py names it as the one exception to using only the tools' public parts.
"""

from __future__ import annotations

import threading

_PENDING = "_rankstudy_reevaluation"


def _schedule_reevaluation_once(self, delay) -> None:
    pending = getattr(self, _PENDING, None)
    if pending is not None and pending.is_alive():
        return
    timer = threading.Timer(delay, lambda: self._open_jobs.release())
    setattr(self, _PENDING, timer)
    timer.start()


def one_reevaluation_timer() -> bool:
    """Make Snakemake's scheduler keep at most one re-evaluation timer pending (in place, once).
    Returns whether the scheduler has the method this replaces; a Snakemake without it is left
    as it is."""
    try:
        from snakemake.scheduling.job_scheduler import JobScheduler
    except ImportError:
        return False
    if not callable(getattr(JobScheduler, "_schedule_reevalutation", None)):  # sic: Snakemake's spelling
        return False
    JobScheduler._schedule_reevalutation = _schedule_reevaluation_once
    return True
