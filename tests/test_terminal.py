"""The terminal of plain `snakemake` (the default profile's logger plugin, rankstudy.pipeline.terminal):
one line per finished job, the running jobs named with their time on each progress line, no line
over the limit. Snakemake's own stream gave 2,625 lines for the default run, 28 of them over 2,000
characters (job blocks listing every input), and the bootstrap's estimate said "12 s left" beside
a 50 s StructRank job without naming it."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from snakemake_interface_logger_plugins.common import LogEvent

from pipeline_runs import copy_run, snakemake
from rankstudy.pipeline.terminal import LINE_LIMIT, CompactFormatter, describe_wildcards, progress_line

REPO = Path(__file__).resolve().parents[1]


def record(event=None, msg: str = "", created: float = 0.0, **fields) -> logging.LogRecord:
    rec = logging.LogRecord("snakemake", logging.INFO, __file__, 0, msg, None, None)
    rec.__dict__.update(fields, event=event, created=created)
    return rec


def job_info(jobid: int, rule: str, created: float, log: str | None = None, **wildcards) -> logging.LogRecord:
    return record(LogEvent.JOB_INFO, created=created, jobid=jobid, rule_name=rule, wildcards=wildcards,
                  log=[log] if log else [], input=[], output=[], reason="Missing output files: x")


def test_a_progress_line_names_the_running_jobs_with_their_time_so_far():
    terminal = CompactFormatter(clock=lambda: 100.0)
    assert terminal.format(job_info(1, "train", 40.0, method="ranknet", featureset="first", dataset="MQ2008",
                                    fold=1, study="s")) == ""
    assert terminal.format(job_info(2, "train", 50.0, method="structrank", featureset="first", dataset="MQ2008",
                                    fold=1, study="s")) == ""
    assert terminal.format(record(LogEvent.JOB_FINISHED, created=52.0, job_id=1)) \
        == "done train ranknet [first] MQ2008 fold 1 (12.0 s)"
    line = terminal.format(record(LogEvent.PROGRESS, done=5, total=6))
    # the mean pace said 12 s; a job running longer than every training done is given as long again
    assert line == "5 of 6 steps (83%) done; about 50 s left; running: train structrank [first] MQ2008 fold 1 (50 s)"


def test_the_progress_line_is_shown_again_with_its_times_as_of_now():
    """Snakemake logs progress when a job ends: a 7-minute job left the line, its time so far and
    the time left, standing for 7 minutes."""
    now = [0.0]
    terminal = CompactFormatter(clock=lambda: now[0])
    assert terminal.refresh() == ""  # no progress yet
    terminal.format(record(LogEvent.RUN_INFO, msg="Job stats:", stats={"train": 3, "all": 1, "total": 4}))
    for jobid, method in ((1, "ranknet"), (2, "structrank")):
        terminal.format(job_info(jobid, "train", 0.0, method=method, featureset="first", fold=1))
    now[0] = 10.0
    terminal.format(record(LogEvent.JOB_FINISHED, created=10.0, job_id=1))
    terminal.format(job_info(3, "train", 10.0, method="ranknet", featureset="first", fold=2))
    assert terminal.format(record(LogEvent.PROGRESS, done=1, total=4)) == (
        "1 of 4 steps (25%) done; about 10 s left; running: train structrank [first] fold 1 (10 s), "
        "train ranknet [first] fold 2 (0 s)")
    now[0] = 300.0
    assert terminal.refresh() == (
        "1 of 4 steps (25%) done; about 5 min 00 s left; running: train structrank [first] fold 1 (5 min 00 s), "
        "train ranknet [first] fold 2 (4 min 50 s)")
    terminal.format(record(LogEvent.JOB_FINISHED, created=300.0, job_id=2))
    terminal.format(record(LogEvent.JOB_FINISHED, created=300.0, job_id=3))
    terminal.format(record(LogEvent.PROGRESS, done=3, total=4))
    assert terminal.refresh() == ""  # nothing running
    assert CompactFormatter(dryrun=True).refresh() == ""


def plugin_handler(refresh_seconds: float | None):
    from snakemake_logger_plugin_rankstudy import LogHandler, LogHandlerSettings

    common = SimpleNamespace(printshellcmds=False, nocolor=True, quiet=None, debug_dag=False, verbose=False,
                             show_failed_logs=False, stdout=False, dryrun=False)
    return LogHandler(common, LogHandlerSettings(refresh_seconds=refresh_seconds))


def test_the_logger_plugin_prints_the_progress_line_again_while_a_job_runs():
    handler = plugin_handler(0.2)
    out = io.StringIO()
    handler.setStream(out)
    started = time.time()
    try:
        handler.handle(job_info(1, "train", started, method="structrank", featureset="first", fold=1))
        handler.handle(job_info(2, "train", started, method="ranknet", featureset="first", fold=1))
        handler.handle(record(LogEvent.JOB_FINISHED, created=time.time(), job_id=2))
        handler.handle(record(LogEvent.PROGRESS, done=1, total=3))
        deadline = time.monotonic() + 20
        while out.getvalue().count("\n1 of 3 steps") < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        handler.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("done train ranknet [first] fold 1 (")
    # the line again, and again, with no record logged: only the handler's own thread printed them
    assert len(lines) >= 4, lines
    assert all(line.startswith("1 of 3 steps (33%) done; about ") and "running: train structrank [first] fold 1 ("
               in line for line in lines[1:]), lines
    time.sleep(0.5)
    assert out.getvalue().splitlines() == lines  # closed (the run ended): no more


def test_the_progress_line_is_not_repeated_while_lines_come_and_its_interval_depends_on_the_stream():
    handler = plugin_handler(60.0)
    handler.setStream(io.StringIO())
    try:
        handler.handle(job_info(1, "train", time.time(), method="structrank", featureset="first", fold=1))
        handler.handle(record(LogEvent.RUN_INFO, msg="Job stats:", stats={"train": 1, "total": 1}))
        assert not handler.refresh()  # a line was printed less than 60 s ago
        handler.refresh_seconds = 0.0
        assert handler.refresh()  # before any job ended: the plan's 0 of 1 steps
        assert handler.stream.getvalue().splitlines()[-1].startswith(
            "0 of 1 steps (0%) done; running: train structrank [first] fold 1 (")
    finally:
        handler.close()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, seconds in ((io.StringIO(), 120.0), (Terminal(), 30.0)):
        handler = plugin_handler(None)
        handler.setStream(stream)
        assert handler.refresh_interval() == seconds
        handler.close()


def test_snakemake_shows_the_progress_line_again_during_a_long_job(tmp_path):
    """The setting through Snakemake's CLI (the environment variable the bootstrap sets), on a
    workflow of one 6-second job: Snakemake itself logs no progress until it ends."""
    (tmp_path / "Snakefile").write_text('rule slow:\n    output: "out.txt"\n    shell: "sleep 6; touch {output}"\n')
    env = {**os.environ, "SNAKEMAKE_LOGGER_RANKSTUDY_REFRESH_SECONDS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--cores", "1", "--logger", "rankstudy"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    again = [line for line in out.stderr.splitlines() if line.startswith("0 of 1 steps (0%) done; running: slow (")]
    assert len(again) >= 3, out.stderr
    assert again[-1] != again[0]  # the job's time so far moved on


def test_a_finished_job_shows_its_steps_summary_and_seconds(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("[train] started\nsummary: l2=0.01, vali ndcg@10 0.6290\n[train 12:00:01] done in 4.7 s\n")
    terminal = CompactFormatter()
    terminal.format(job_info(7, "train", 0.0, log=str(log), method="ranknet", featureset="first", fold=2))
    assert terminal.format(record(LogEvent.JOB_FINISHED, created=9.0, job_id=7)) \
        == "done train ranknet [first] fold 2 (4.7 s): l2=0.01, vali ndcg@10 0.6290"


def test_the_protocols_hashes_are_left_out_of_a_jobs_name():
    assert describe_wildcards({"data": "synthetic.e39b662f", "cleaning": "clean-8f937864", "norm": "zscore",
                               "fold": 2}) == "synthetic zscore fold 2"


def test_scheduling_chatter_and_the_all_rule_show_nothing():
    terminal = CompactFormatter()
    for text in ("Select jobs to execute...", "Execute 2 jobs...", "[Fri Nov 27 00:22:39 2026]"):
        assert terminal.format(record(msg=text)) == ""
    terminal.format(job_info(0, "all", 0.0))
    assert terminal.format(record(LogEvent.JOB_FINISHED, job_id=0)) == ""
    assert terminal.format(record(msg="Job stats:\njob count\ntrain 2")) == "Job stats:\njob count\ntrain 2"


def test_an_error_keeps_snakemakes_words_with_its_file_lists_cut_short():
    inputs = [f"results/runs/default/synthetic/first/m{i}/fold{f}/scores.txt" for i in range(60) for f in range(5)]
    error = record(LogEvent.JOB_ERROR, jobid=3, rule_name="tables", msg=None, rule_msg=None, input=inputs,
                   output=["results/tables/default/synthetic.md"], log=["results/logs/tables/s.log"],
                   conda_env=None, shellcmd=None, aux={})
    text = CompactFormatter().format(error)
    assert "\nError in rule tables:" in text and "(and 297 more)" in text
    assert "log: results/logs/tables/s.log (check log file(s) for error details)" in text
    assert max(map(len, text.splitlines())) < 400


def test_no_line_is_longer_than_the_limit():
    text = CompactFormatter().format(record(msg="x" * 50_000 + "\nshort"))
    first, second = text.splitlines()
    assert len(first) <= LINE_LIMIT and "more characters in Snakemake's complete log" in first
    assert second == "short"


def test_a_dry_run_lists_one_line_per_job_with_its_reason():
    terminal = CompactFormatter(dryrun=True)
    assert terminal.format(job_info(4, "evaluate", 0.0, method="ranknet", featureset="first", fold=1)) \
        == "would run evaluate ranknet [first] fold 1: Missing output files: x"
    assert progress_line(0, 3, None, []) == "0 of 3 steps (0%) done"


def test_plain_snakemake_on_the_tiny_study_prints_a_short_terminal(tiny_base):
    """The tiny study run with `snakemake --cores 2` alone: the default profile (profiles/default,
    copied with the workflow as a clone has it) names the plugin, so the terminal is a line per
    finished job and a progress line each, not Snakemake's job blocks (737 lines, 14 over 2,000
    characters and the longest 11,542, before the profile)."""
    workdir, out = tiny_base
    lines = (out.stdout + out.stderr).splitlines()
    assert "Using workflow specific profile profiles/default" in lines[0]
    jobs = sum(line.startswith("done ") for line in lines)
    assert jobs >= 40 and len(lines) < 2 * jobs + 60, len(lines)
    assert max(map(len, lines)) <= LINE_LIMIT
    assert any(line.startswith("done train ranknet [first] synthetic fold 1 (") for line in lines)
    assert "Complete log(s):" in lines[-2]  # every job block is still in Snakemake's own log
    complete = Path(lines[-2].split("Complete log(s):", 1)[1].strip()).read_text()
    assert "rule train:" in complete and "    input: " in complete


def test_the_local_profile_works_beside_the_default_one(tiny_base, tmp_path):
    workdir = copy_run(tiny_base[0], tmp_path / "copy")
    out = snakemake(workdir, "--profile", "profiles/local", "--dry-run")
    said = out.stdout + out.stderr
    assert "profiles/local and workflow specific profile profiles/default" in said
    assert "Nothing to be done" in said
