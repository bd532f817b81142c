"""The bootstrap's `run`: Snakemake's output passed through line by line (the default profile's
logger plugin keeps it short, tests/test_terminal.py), its exit code, and pip's output held back
unless an install fails."""

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
spec = importlib.util.spec_from_file_location("bootstrap", REPO / "setup" / "bootstrap.py")
bootstrap = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bootstrap)


def test_relay_passes_every_line_on_as_it_comes():
    lines = ["Building DAG of jobs...\n", "done train ranknet [first] synthetic fold 1 (4.7 s)\n",
             "1 of 4 steps (25%) done; about 1 min left; running: train lambdamart [first] synthetic fold 1 (50 s)\n"]
    out = io.StringIO()
    assert bootstrap.relay(lines, out) is None
    assert out.getvalue() == "".join(lines)  # the plugin said it all: no second estimate


def test_run_keeps_the_output_and_the_exit_code(capsys):
    """A stand-in for snakemake: progress on stderr, then a failure."""
    script = "import sys; print('hello', flush=True); sys.stderr.write('1 of 2 steps (50%) done\\n'); sys.exit(3)"
    assert bootstrap.run_snakemake([sys.executable, "-c", script], dict(os.environ)) == 3
    assert capsys.readouterr().out.splitlines() == ["hello", "1 of 2 steps (50%) done"]


# what pip printed even with --quiet on a cold install: 188 such lines before anything else
PIP_NOISE = ("import sys\n"
             "for i in range(188): print(f\"WARNING: Location 'file:///opt/pypi-more/simple/p{i}/' is ignored\")\n"
             "sys.exit(int(sys.argv[1]))\n")


def test_pips_output_is_shown_only_when_the_install_fails(capsys):
    bootstrap.quiet_install([sys.executable, "-c", PIP_NOISE, "0"])
    assert capsys.readouterr() == ("", "")
    with pytest.raises(SystemExit) as stopped:
        bootstrap.quiet_install([sys.executable, "-c", PIP_NOISE, "1"])
    assert capsys.readouterr().out.count("is ignored") == 188  # then what failed is on the screen
    assert "failed (exit 1): pip's output is above" in str(stopped.value.code)


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


def test_the_full_output_flag_turns_the_default_profile_off(monkeypatch):
    """--full-output: Snakemake's own terminal, job blocks and all, which the default profile's
    logger plugin replaces."""
    ran = []
    monkeypatch.setattr(bootstrap, "ensure_env", lambda: None)
    monkeypatch.setattr(bootstrap, "check_configfiles", lambda args, env: 0)
    monkeypatch.setattr(bootstrap, "clear_stale_lock", lambda *a, **k: False)
    monkeypatch.setattr(bootstrap, "run_snakemake", lambda cmd, env: ran.append(cmd) or 0)
    assert bootstrap.main(["run", "--full-output", "-n"]) == 0
    assert ran[0][1:] == ["--cores", os.environ.get("CORES", "2"), "--rerun-incomplete", "--workflow-profile", "none",
                          "-n"]
    assert bootstrap.main(["run", "-n"]) == 0 and "--workflow-profile" not in ran[1]


def test_run_on_a_terminal_asks_for_the_terminals_refresh_of_the_progress_line(monkeypatch):
    """Snakemake writes to the bootstrap's pipe, so its logger plugin would refresh the progress line
    at a log's rate: the bootstrap, on a terminal, asks for a terminal's."""
    envs = []
    monkeypatch.setattr(bootstrap, "ensure_env", lambda: None)
    monkeypatch.setattr(bootstrap, "check_configfiles", lambda args, env: 0)
    monkeypatch.setattr(bootstrap, "clear_stale_lock", lambda *a, **k: False)
    monkeypatch.setattr(bootstrap, "run_snakemake", lambda cmd, env: envs.append(env) or 0)
    monkeypatch.delenv(bootstrap.REFRESH_ENV, raising=False)
    for tty in (True, False):
        monkeypatch.setattr(bootstrap.sys.stdout, "isatty", lambda: tty, raising=False)
        assert bootstrap.main(["run", "-n"]) == 0
    assert envs[0][bootstrap.REFRESH_ENV] == "30" and bootstrap.REFRESH_ENV not in envs[1]
    monkeypatch.setenv(bootstrap.REFRESH_ENV, "5")  # the user's own choice wins
    monkeypatch.setattr(bootstrap.sys.stdout, "isatty", lambda: True, raising=False)
    bootstrap.main(["run", "-n"])
    assert envs[2][bootstrap.REFRESH_ENV] == "5"


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


def test_the_quick_starts_path_runs_the_bootstrap_in_setup():
    """The set-up tooling moved to setup/; `python3 workflow/bootstrap.py ...`, the README's quick
    start, still runs it with the same arguments."""
    out = subprocess.run([sys.executable, str(REPO / "workflow" / "bootstrap.py"), "nothing"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "python3 workflow/bootstrap.py run" in out.stdout  # its usage, then exit 2
    assert (REPO / "setup" / "bootstrap.py").read_text().startswith("#!/usr/bin/env python3\n\"\"\"Quick start")
