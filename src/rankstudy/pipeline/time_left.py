"""The time a run has left, from its jobs finished and running: the estimate on the terminal's
progress line (rankstudy.pipeline.terminal). Standard library only.

The progress line used to say the mean pace of the steps done (wall seconds so far / steps done,
times the steps left), which ran about 2x optimistic on a run whose dear jobs come late:

* the jobs finished are more likely the short ones (by the time a 7-minute StructRank training
  ends, dozens of evaluations have), so their mean leaves out the long jobs still running, and
  the rules that come later (training after data preparation);
* a job running counted as one step of that pace whatever it had done, and the run's end waits
  for its longest job whatever the pace of the others.

Here:

* a running job is expected to take as long as the same work finished on other folds (its rule
  and wildcards but the fold), else its rule's finished jobs, of those that ran longer than it
  has so far; when none did, as long again as it has run (right for a job halfway, short for one
  early on, but growing as it runs: the line never stays at "nearly done" beside a job that is
  not);
* a rule's jobs not started are expected to take the mean of its jobs seen so far, finished and
  running (at their expected total), each kind of job (its wildcards but the fold) weighed alike:
  each has as many folds to do, while more folds of the quick kinds are done; a rule not seen yet
  the mean of the rules seen;
* the work left, in job-seconds, is shared among as many jobs as ran at once on average so far
  (the cores, or fewer where the workflow's dependencies left them idle), and the estimate is
  never shorter than what the longest running job has left.

tests/test_time_left.py replays made-up runs on two cores and compares both estimates with the
time that was left.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Job:
    rule: str
    seconds: float  # a finished job's wall seconds, a running job's so far
    kind: str = ""  # the same work on another fold (the rule and its wildcards but the fold), if known


def expected_total(seconds: float, like: Sequence[float], prior: float) -> float:
    """The wall seconds a job running ``seconds`` so far is expected to take in all, given the
    durations of the finished jobs ``like`` it: the mean of those longer than ``seconds``; as long
    again as so far when none is; ``prior`` (at least as long again) when there are none."""
    longer = [d for d in like if d > seconds]
    if longer:
        return sum(longer) / len(longer)
    return max(prior, 2 * seconds) if not like else 2 * seconds


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def time_left(finished: Sequence[Job], running: Sequence[Job], waiting: Mapping[str | None, int],
              wall: float) -> float | None:
    """Seconds until the run ends (the module docstring): ``finished`` and ``running`` jobs,
    ``waiting`` the jobs not started per rule (``None``: of rules not known), ``wall`` the seconds
    since the first job started. None before any job finished."""
    done: dict[str, list[float]] = defaultdict(list)
    same: dict[str, list[float]] = defaultdict(list)
    for job in finished:
        done[job.rule].append(job.seconds)
        if job.kind:
            same[job.kind].append(job.seconds)
    busy = sum(job.seconds for job in finished) + sum(job.seconds for job in running)
    if not finished or wall <= 0 or busy <= 0:
        return None
    prior = sum(job.seconds for job in finished) / len(finished)
    # a running job is like the same work done on other folds, else like its rule's jobs
    totals = [(job, expected_total(job.seconds, same.get(job.kind) or done.get(job.rule, ()), prior))
              for job in running]
    # each rule's jobs finished and running (these at their expected total), by kind
    seen: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for i, (job, total) in enumerate([*((job, job.seconds) for job in finished), *totals]):
        seen[job.rule][job.kind or f"#{i}"].append(total)
    # a rule's mean over its kinds: each kind has as many folds to do, while the jobs finished are
    # more of the quick kinds (three folds of RankNet done while StructRank's first runs)
    means = {rule: mean([mean(d) for d in kinds.values()]) for rule, kinds in seen.items()}
    overall = mean(list(means.values()))  # a rule not seen yet: the rules seen, weighed alike
    ahead = [total - job.seconds for job, total in totals]
    work = sum(ahead) + sum(count * means.get(rule, overall) for rule, count in waiting.items() if count > 0)
    at_once = busy / wall  # jobs running at once on average so far
    return max(work / at_once, max(ahead, default=0.0))


def waiting_jobs(planned: Mapping[str, int], finished: Sequence[Job], running: Sequence[Job],
                 left: int) -> dict[str | None, int]:
    """The jobs not started per rule: Snakemake's planned jobs per rule (its job stats) less those
    finished and running, and under ``None`` whatever of the ``left`` jobs not started (the
    progress line's total less done less running) the plan does not account for (a checkpoint
    grew the workflow, or no plan was seen)."""
    count: dict[str | None, int] = dict(planned)
    for job in (*finished, *running):
        if job.rule in count:
            count[job.rule] -= 1
    waiting = {rule: n for rule, n in count.items() if n > 0}
    waiting = _trimmed(waiting, left)
    unknown = left - sum(waiting.values())
    if unknown > 0:
        waiting[None] = unknown
    return waiting


def _trimmed(waiting: dict[str | None, int], left: int) -> dict[str | None, int]:
    """At most ``left`` jobs in all, should the plan count jobs that will not run after all: cut
    from its last rules (Snakemake lists them in the order of the workflow, the report last)."""
    extra = sum(waiting.values()) - max(left, 0)
    for rule in reversed(list(waiting)):
        if extra <= 0:
            break
        cut = min(extra, waiting[rule])
        waiting[rule] -= cut
        extra -= cut
    return {rule: n for rule, n in waiting.items() if n > 0}
