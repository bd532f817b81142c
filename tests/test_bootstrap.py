"""The bootstrap's `run`: Snakemake's output passed through line by line, with an estimate of the
time left after each of its progress lines, and its exit code."""

from __future__ import annotations

import importlib.util
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bootstrap", REPO / "workflow" / "bootstrap.py")
bootstrap = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bootstrap)


@pytest.mark.parametrize("done, total, elapsed, expected", [
    (10, 40, 100.0, "10 of 40 steps done in 1m40s (10.0 s per step): about 5m00s left"),
    (1, 3, 4000.0, "1 of 3 steps done in 1h06m (4000.0 s per step): about 2h13m left"),
    (3, 3, 45.2, "3 of 3 steps done in 45s"),  # nothing left to estimate
])
def test_the_estimate_is_the_remaining_steps_at_the_pace_so_far(done, total, elapsed, expected):
    assert bootstrap.progress_estimate(done, total, elapsed) == expected


# what Snakemake 9 writes during a run (abridged)
SNAKEMAKE_LINES = [
    "Building DAG of jobs...\n",
    "Job stats:\n", "job         count\n", "train           2\n", "\n",
    "[Tue Nov 24 10:59:45 2026]\n", "localrule train:\n", "    jobid: 3\n",
    "[Tue Nov 24 11:00:05 2026]\n", "Finished jobid: 3 (Rule: train)\n",
    "1 of 4 steps (25%) done\n",
    "2 of 4 steps (50%) done\n",
    "4 of 4 steps (100%) done\n",
    "Complete log(s): /x/.snakemake/log/2026-11-24T105904.snakemake.log\n",
]


def test_relay_passes_every_line_on_and_adds_an_estimate_after_each_progress_line():
    out, clock = io.StringIO(), iter([20.0, 30.0, 50.0])
    hint = bootstrap.relay(SNAKEMAKE_LINES, out, lambda: next(clock))
    lines = out.getvalue().splitlines(keepends=True)
    assert [line for line in lines if not line.startswith("[bootstrap]")] == SNAKEMAKE_LINES
    added = {lines[i - 1].strip(): line.strip() for i, line in enumerate(lines) if line.startswith("[bootstrap]")}
    assert added == {
        "1 of 4 steps (25%) done": "[bootstrap] 1 of 4 steps done in 20s (20.0 s per step): about 1m00s left",
        "2 of 4 steps (50%) done": "[bootstrap] 2 of 4 steps done in 30s (15.0 s per step): about 30s left",
        "4 of 4 steps (100%) done": "[bootstrap] 4 of 4 steps done in 50s"}
    assert hint is None


def test_run_keeps_the_output_and_the_exit_code(capsys):
    """A stand-in for snakemake: progress on stderr, then a failure."""
    script = "import sys; print('hello', flush=True); sys.stderr.write('1 of 2 steps (50%) done\\n'); sys.exit(3)"
    assert bootstrap.run_snakemake([sys.executable, "-c", script], dict(os.environ)) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["hello", "1 of 2 steps (50%) done"]
    assert out[2].startswith("[bootstrap] 1 of 2 steps done in 0s (") and out[2].endswith("left")


def test_ctrl_c_reaches_snakemake_and_its_last_words_and_exit_code_come_through():
    """Ctrl-C signals the terminal's whole process group: the bootstrap keeps relaying while the
    stand-in stops (writing more than a pipe holds), then ends with its exit code."""
    # a shell's background job starts with SIGINT ignored, and Python then raises no
    # KeyboardInterrupt: the stand-in takes Ctrl-C as Snakemake in a terminal does
    child = ("import signal, sys, time\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
             "try:\n    print('ready', flush=True)\n    time.sleep(60)\n"
             "except KeyboardInterrupt:\n"
             "    print('stopping\\n' * 20000, end='', flush=True)\n    sys.exit(130)\n")
    wrapper = (f"import sys, importlib.util; spec = importlib.util.spec_from_file_location('b', {str(spec.origin)!r})\n"
               "b = importlib.util.module_from_spec(spec); spec.loader.exec_module(b)\n"
               f"sys.exit(b.run_snakemake([sys.executable, '-c', {child!r}], {{}}))\n")
    proc = subprocess.Popen([sys.executable, "-c", wrapper], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline() == "ready\n"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does
    try:
        rest, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:  # stuck, as a relay that stopped reading would leave it
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert rest.count("stopping\n") == 20000


def test_the_terminal_shows_one_line_per_finished_job_with_its_summary_and_keeps_errors(tmp_path):
    """Snakemake's job blocks (thousands of characters of inputs and reasons) stay in the log
    file; a finished job is one line with the step's own summary from its log."""
    log = tmp_path / "results/logs/train/default/synthetic/first/ranknet/fold3.log"
    log.parent.mkdir(parents=True)
    log.write_text("[train] wildcards: ...\nsummary: l2=0.01, vali ndcg@10 0.6229\n[train] done in 3.21 s\n")
    long_reason = "    reason: Missing output files: " + ", ".join(f"results/x{i}.json" for i in range(2000)) + "\n"
    lines = ["Building DAG of jobs...\n", "Select jobs to execute...\n", "Execute 1 jobs...\n", "\n",
             "[Wed Nov 25 18:42:51 2026]\n", "localrule train:\n", "    input: a, b\n",
             "    log: results/logs/train/default/synthetic/first/ranknet/fold3.log\n", "    jobid: 7\n",
             long_reason,
             "    wildcards: study=default, dataset=synthetic, featureset=first, method=ranknet, fold=3\n",
             "[Wed Nov 25 18:43:00 2026]\n", "Finished jobid: 7 (Rule: train)\n", "1 of 2 steps (50%) done\n",
             "localrule all:\n", "    jobid: 0\n", "Finished jobid: 0 (Rule: all)\n",
             "Error in rule evaluate:\n", "    message: rankstudy evaluate: bad file x.npz\n",
             "2 of 2 steps (100%) done\n"]
    out, saved = io.StringIO(), io.StringIO()
    terminal = bootstrap.Terminal(out, lambda: 10.0, workdir=tmp_path)
    for line in lines:
        saved.write(line)
        terminal.line(line)
    shown = out.getvalue().splitlines()
    assert shown[:2] == ["Building DAG of jobs...",
                         "done train ranknet [first] synthetic fold 3 (3.2 s): l2=0.01, vali ndcg@10 0.6229"]
    assert "Error in rule evaluate:" in shown and "    message: rankstudy evaluate: bad file x.npz" in shown
    assert "1 of 2 steps (50%) done" in shown and not any("reason" in s or "done all" in s for s in shown)
    assert max(map(len, shown)) < 200 and long_reason in saved.getvalue()


def test_the_full_output_flag_passes_every_line_on():
    out = io.StringIO()
    bootstrap.relay(["localrule train:\n", "    jobid: 3\n"], out, lambda: 1.0, full=True)
    assert out.getvalue() == "localrule train:\n    jobid: 3\n"


def test_the_configfiles_given_to_snakemake_are_found_in_its_arguments():
    assert bootstrap.configfiles_of(["--configfile", "a.yaml", "b.yaml", "--config", "folds=[1]", "-n",
                                     "--configfiles=c.yaml", "all"]) == ["a.yaml", "b.yaml", "c.yaml"]
    assert bootstrap.configfiles_of(["-n", "--forcerun", "x.json"]) == []


@pytest.mark.integration
def test_run_names_the_file_and_line_of_bad_yaml_in_a_configfile_before_snakemake(tmp_path, capfd):
    """Snakemake parses --configfile itself, before the Snakefile, and says only "Config file is
    not valid JSON or YAML": the bootstrap checks the files first."""
    study = tmp_path / "study.yaml"
    study.write_text("study: s\nfolds:\n\t- 1\n")
    assert bootstrap.check_configfiles(["--configfile", str(study), "-n"], dict(os.environ)) == 1
    assert capfd.readouterr().err == (f"rankstudy: config file {study}:3: found character '\\t' (a tab; indent with "
                                      f"spaces) that cannot start any token\n")
    study.write_text("study: s\nfolds: [1]\n")
    assert bootstrap.check_configfiles(["--configfile", str(study)], dict(os.environ)) == 0
    assert bootstrap.check_configfiles(["-n"], dict(os.environ)) == 0
