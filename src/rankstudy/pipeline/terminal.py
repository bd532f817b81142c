"""What a person reads of a run in the terminal of plain ``snakemake``: Snakemake's log records
shown short, by the logger plugin ``rankstudy`` (the module snakemake_logger_plugin_rankstudy,
named in the default profile, profiles/default/config.yaml, which Snakemake reads by itself).

Snakemake's own stream shows every job as a block listing all its inputs, outputs and the reason
it runs: lines of thousands of characters (the tables job lists every fold's files), 2,625 lines
for the default run. Here each finished job is one line (``done train ranknet [first] synthetic
fold 1 (2.1 s): <the step's summary line>``), each progress line says the time left
(rankstudy.pipeline.time_left) and names the jobs running with their time so far, and comes again
while jobs run and nothing else is said (:meth:`CompactFormatter.refresh`, called by the logger
plugin's own timer), a dry run lists one line per job with its reason, errors keep Snakemake's
words with their file lists cut short, and no line is longer than :data:`LINE_LIMIT`. Snakemake's complete log (its last line names the file, under
``.snakemake/log/``) still holds every block as Snakemake writes it; ``--workflow-profile none``
shows Snakemake's own stream again.

Standard library and Snakemake only (and rankstudy.pipeline.time_left, which imports nothing
else): Snakemake imports every logger plugin when it starts."""

from __future__ import annotations

import re
import time
from pathlib import Path

from snakemake.logging import DefaultFormatter
from snakemake_interface_logger_plugins.common import LogEvent

from rankstudy.pipeline.time_left import Job, time_left, waiting_jobs

LINE_LIMIT = 1000  # characters of one terminal line; the rest stays in the complete log
FILES_SHOWN = 3  # files of a list shown in an error block, then "(and N more)"
RUNNING_SHOWN = 4  # jobs named on a progress line, then "and N more"
# Snakemake's scheduling lines that say nothing a person acts on (they stay in the complete log)
CHATTER = re.compile(r"^(\[\w{3} \w{3} .*\d{4}\]|Select jobs to execute\.\.\.|Execute \d+ jobs?\.\.\.)$")


def duration(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``2 h 07 min``."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"


def describe_wildcards(wildcards: dict) -> str:
    """A job's wildcards as a person names the job: ``ranknet [first] synthetic fold 1``,
    ``synthetic zscore fold 2``."""
    w = {k: str(v) for k, v in dict(wildcards or {}).items()}
    # the protocol's folder names carry hashes of their settings: the data set's name is enough
    if "data" in w:
        w["data"] = re.sub(r"\.[0-9a-f]{6,}$", "", w["data"])
    if re.fullmatch(r"clean-[0-9a-f]{6,}", w.get("cleaning", "")):
        del w["cleaning"]
    head = f"{w.pop('method')} [{w.pop('featureset')}]" if "method" in w and "featureset" in w else w.pop("method", "")
    fold = f"fold {w.pop('fold')}" if "fold" in w else ""
    w.pop("study", None)
    return " ".join(part for part in (head, *w.values(), fold) if part)


def job_log_summary(path: Path) -> tuple[str, float | None]:
    """The last ``summary:`` line of a job's log and the step's ``done in N s`` seconds."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "", None
    summary = next((l.split("summary:", 1)[1].strip() for l in reversed(lines) if l.startswith("summary:")), "")
    done = next((re.search(r"done in ([\d.]+) s", l) for l in reversed(lines) if "] done in " in l), None)
    return summary, (float(done[1]) if done else None)


def cap(text: str, limit: int = LINE_LIMIT) -> str:
    """Every line of ``text`` at most ``limit`` characters, a cut one saying where the rest is."""
    def one(line: str) -> str:
        if len(line) <= limit:
            return line
        return f"{line[:limit - 80]} ... ({len(line) - limit + 80:,} more characters in Snakemake's complete log)"

    return "\n".join(one(line) for line in text.split("\n"))


def shortened(files, shown: int = FILES_SHOWN) -> list[str]:
    files = list(files or [])
    return files if len(files) <= shown + 1 else [*files[:shown], f"(and {len(files) - shown} more)"]


def progress_line(done: int, total: int, left: float | None, running: list[tuple[str, float]]) -> str:
    """Snakemake's ``N of M steps (P%) done``, the time ``left`` (rankstudy.pipeline.time_left: a
    guess, hence "about"), and the jobs running with their time so far: a long job shows as such
    (an estimate alone said "12 s left" beside a 50 s job)."""
    line = f"{done} of {total} steps ({100 * done / total if total else 100:.0f}%) done"
    if left is not None and 0 < done < total:
        line += f"; about {duration(left)} left"
    if running and done < total:
        names = [f"{what} ({duration(seconds)})" for what, seconds in running[:RUNNING_SHOWN]]
        more = f" and {len(running) - RUNNING_SHOWN} more" if len(running) > RUNNING_SHOWN else ""
        line += f"; running: {', '.join(names)}{more}"
    return line


class CompactFormatter(DefaultFormatter):
    """Snakemake's records as the terminal shows them (the module docstring). Keeps the jobs
    started and not yet finished, and those finished, so one handler uses it under its lock
    (Snakemake's queue listener, and the handler's refresh of the progress line)."""

    def __init__(self, quiet=None, show_failed_logs: bool = False, dryrun: bool = False,
                 clock=time.time) -> None:
        super().__init__(quiet, show_failed_logs)
        self.dryrun, self.clock = dryrun, clock
        self.jobs: dict[int, dict] = {}  # started, not finished: {rule, what, kind, log, started}
        self.done_jobs: list[Job] = []  # finished, with their wall seconds
        self.planned: dict[str, int] = {}  # Snakemake's job stats: the jobs of each rule
        self.progress: tuple[int, int] | None = None  # the last progress record's (done, total)
        self.first_start: float | None = None

    def format(self, record) -> str:
        return cap(self.text(record))

    def text(self, record) -> str:
        event = getattr(record, "event", None)
        if event == LogEvent.WORKFLOW_STARTED:
            return ""  # Snakemake's banner (version, host, paths): in the complete log
        if event == LogEvent.JOB_INFO:
            return self.job_info(record)
        if event == LogEvent.JOB_STARTED:
            return ""
        if event == LogEvent.JOB_FINISHED:
            return self.finished(self.jobs.pop(getattr(record, "job_id", None), None), record.created)
        if event == LogEvent.PROGRESS:
            self.progress = (getattr(record, "done", 0), getattr(record, "total", 0))
            return self.progress_now()
        if event == LogEvent.RUN_INFO and isinstance(getattr(record, "stats", None), dict):
            self.planned = {rule: int(n) for rule, n in record.stats.items() if rule != "total"}
            if self.progress is None:  # shown again while the first jobs run (no progress before one ends)
                self.progress = (0, int(record.stats.get("total", sum(self.planned.values()))))
        if event == LogEvent.JOB_ERROR:
            self.jobs.pop(getattr(record, "jobid", None), None)
            fields = record.__dict__.copy()
            for key in ("input", "output"):
                fields[key] = shortened(fields.get(key))
            return self.format_job_error(fields)
        if event is None and CHATTER.match((record.getMessage() or "").strip()):
            return ""
        return super().format(record)

    def progress_now(self) -> str:
        """The last progress record's line, with the time left and the running jobs' time as of
        now."""
        done, total = self.progress
        now = self.clock()
        running = [Job(job["rule"], now - job["started"], job["kind"]) for job in self.jobs.values()]
        left = None
        if self.first_start is not None:
            waiting = waiting_jobs(self.planned, self.done_jobs, running, total - done - len(running))
            waiting.pop("all", None)  # the target rule's job does nothing
            left = time_left(self.done_jobs, running, waiting, now - self.first_start)
        return progress_line(done, total, left,
                             [(job["what"], now - job["started"]) for job in self.jobs.values()])

    def refresh(self) -> str:
        """The progress line again while jobs run (their time so far and the time left moved on
        since the last job ended), or "" when there is nothing to refresh."""
        if self.dryrun or self.progress is None or not self.jobs or self.progress[0] >= self.progress[1]:
            return ""
        return cap(self.progress_now())

    def job_info(self, record) -> str:
        rule = getattr(record, "rule_name", "")
        wildcards = dict(getattr(record, "wildcards", {}) or {})
        what = f"{rule} {describe_wildcards(wildcards)}".strip()
        if self.dryrun:
            if rule == "all":
                return ""
            reason = " ".join(str(getattr(record, "reason", "") or "").split())
            return cap(f"would run {what}" + (f": {reason}" if reason else ""), 240)
        logs = list(getattr(record, "log", None) or [])
        # the same work on another fold: a running job is expected to take about as long
        kind = f"{rule} {describe_wildcards({k: v for k, v in wildcards.items() if k != 'fold'})}".strip()
        self.jobs[getattr(record, "jobid", None)] = {"rule": rule, "what": what, "kind": kind,
                                                     "log": logs[0] if logs else None, "started": record.created}
        if self.first_start is None:
            self.first_start = record.created
        return ""

    def finished(self, job: dict | None, at: float) -> str:
        if job is None or job["rule"] == "all":
            return ""
        self.done_jobs.append(Job(job["rule"], at - job["started"], job["kind"]))
        summary, seconds = job_log_summary(Path(job["log"])) if job["log"] else ("", None)
        seconds = at - job["started"] if seconds is None else seconds
        return f"done {job['what']} ({seconds:.1f} s)" + (f": {summary}" if summary else "")
