#!/usr/bin/env python3
"""Quick start on a machine that has only Python >= 3.11 and git.

    python3 workflow/bootstrap.py run  [--full-output] [snakemake args...]   # default pipeline, end to end
    python3 workflow/bootstrap.py test [pytest args...]      # the test suite
    python3 workflow/bootstrap.py ui   [mlflow ui args...]   # browse the runs in MLflow's UI
    python3 workflow/bootstrap.py setup                      # only create/refresh ./.venv

Each creates (or reuses) ./.venv, installs rankstudy with its test, cluster, neural, gbdt and docs extras when
pyproject.toml changed since the last install, then runs the command inside it
(`run` is snakemake with --cores $CORES, default 2, and --rerun-incomplete; it first removes
the lock a killed run left behind, when no snakemake runs here; its terminal is plain
snakemake's, which the default profile keeps short: a line per finished job, the time left and
the running jobs on each progress line, shown again every 30 s while jobs run; `--full-output` shows Snakemake's own job blocks
instead). pip's output is shown only when an install fails. Only the standard library is used
here, because nothing else is installed yet. Afterwards `. .venv/bin/activate` puts
snakemake, pytest and mlflow on PATH for the commands of the docs (docs/getting-started.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import signal
import sqlite3
import subprocess
import sys
import time
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / ".venv"
BIN = VENV / "bin"
STAMP = VENV / ".rankstudy-installed"
# the logger plugin's setting: the progress line again every 30 s of silence while jobs run, as on
# a terminal (snakemake_logger_plugin_rankstudy)
REFRESH_ENV, TERMINAL_REFRESH = "SNAKEMAKE_LOGGER_RANKSTUDY_REFRESH_SECONDS", "30"


def say(msg: str) -> None:
    print(f"[bootstrap] {msg}", flush=True)


def ensure_env() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"rankstudy needs Python >= 3.11, this is {sys.version.split()[0]}")
    if not (BIN / "python").exists():
        say(f"creating virtual environment {VENV}")
        try:
            venv.create(VENV, with_pip=True)
        except Exception as exc:  # e.g. Debian without python3-venv: ensurepip missing
            sys.exit(f"could not create {VENV}: {exc}\n"
                     "On Debian/Ubuntu install the venv module first: apt-get install python3-venv")
    wanted = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()
    if not (STAMP.exists() and STAMP.read_text().strip() == wanted):
        install(wanted)
    # the package's own modules byte-compiled (0.05 s when current): pip leaves an editable install's
    # source alone, and where PYTHONDONTWRITEBYTECODE is set (this machine) every job compiled each
    # module it imports again, about 0.1 CPU-s a job
    subprocess.run([str(BIN / "python"), "-m", "compileall", "-q", str(REPO / "src")], stdout=subprocess.DEVNULL,
                   check=False)


def install(wanted: str) -> None:
    say("installing rankstudy and its dependencies into .venv (first run takes a few minutes)")
    pip = [str(BIN / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
    quiet_install(pip + ["--quiet", "--upgrade", "pip"])
    # pip byte-compiles every module (about half its time), not left to the first import: where
    # PYTHONDONTWRITEBYTECODE is set, no later process writes a .pyc, and each job would compile
    # its imports again (docs/results/2026-11-timings.md)
    quiet_install(pip + ["--quiet", "-e", f"{REPO}[test,cluster,neural,gbdt,docs]"])
    STAMP.write_text(wanted)


def quiet_install(cmd: list[str]) -> None:
    """Run pip with its output held back, and shown (then exit) only if it fails: even with
    --quiet a cold install opened with 188 lines of warnings about package index locations it
    ignores, which say nothing to act on when the install works."""
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    if done.returncode:
        sys.stdout.write(done.stdout)
        sys.exit(f"[bootstrap] {' '.join(cmd[2:5])} ... failed (exit {done.returncode}): pip's output is above")


# the saved views of the runs table the pipeline writes, one per study: the experiment tag
# f"{VIEW_TAG}{VIEW_PREFIX}<study>" (rankstudy.tracking.views.view_key)
VIEW_TAG, VIEW_PREFIX = "mlflow.sharedViewState.", "rankstudy-"


def study_views(db: Path, experiment: str = "rankstudy") -> tuple[str | None, dict[str, str]]:
    """The experiment's id (None when the store has no such experiment) and its studies' saved
    views, {study: view key}."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            row = con.execute("SELECT experiment_id FROM experiments WHERE name = ?", (experiment,)).fetchone()
            keys = [] if row is None else [k for (k,) in con.execute(
                "SELECT key FROM experiment_tags WHERE experiment_id = ? AND substr(key, 1, ?) = ? ORDER BY key",
                (row[0], len(VIEW_TAG + VIEW_PREFIX), VIEW_TAG + VIEW_PREFIX))]
    except sqlite3.Error:
        row, keys = None, []
    views = {key[len(VIEW_TAG + VIEW_PREFIX):]: key[len(VIEW_TAG):] for key in keys}
    return (None if row is None else str(row[0])), views


def runs_url(db: Path, port: str, experiment: str = "rankstudy", study: str | None = None) -> str:
    """The UI's page of the experiment's training runs, or with ``study`` the study's saved view
    (its runs, its test metrics as columns). MLflow 3 opens an experiment on its GenAI pages
    unless the URL asks for the machine-learning workflow."""
    base = f"http://127.0.0.1:{port}/"
    experiment_id, views = study_views(db, experiment)
    if experiment_id is None:
        return base
    return (f"{base}#/experiments/{experiment_id}/runs?workflowType=machine_learning"
            + (f"&viewStateShareKey={views[study]}" if study in views else ""))


def ui_command(args: list[str], db: Path = REPO / "results" / "mlflow.db") -> list[str]:
    if not db.exists():
        sys.exit(f"{db} does not exist yet: run the pipeline first (python3 workflow/bootstrap.py run)")
    # MLflow recorded the artifacts' absolute folder: after results/ moved, point it at the new one
    subprocess.run([str(BIN / "python"), "-m", "rankstudy.tracking.relocate", str(db)], check=True)
    return [str(BIN / "mlflow"), "ui", "--backend-store-uri", f"sqlite:///{db}", *args]


def ui_address(args: list[str]) -> tuple[str, str]:
    """The host to ask and the port `mlflow ui` listens on, read from its arguments (``--port N``,
    ``--port=N``, ``-p N``; ``--host``/``-h`` likewise; MLflow's defaults 127.0.0.1 and 5000); a
    server bound to every interface is asked on the loopback."""
    def option(long: str, short: str, default: str) -> str:
        value = default
        for i, arg in enumerate(args):
            if arg in (long, short) and i + 1 < len(args):
                value = args[i + 1]
            elif arg.startswith(long + "="):
                value = arg.split("=", 1)[1]
        return value

    host = option("--host", "-h", "127.0.0.1")
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host), option("--port", "-p", "5000")


def announce_ui(db: Path, port: str) -> None:
    """The addresses to open: the runs page, and one per study (its saved view)."""
    say(f"open {runs_url(db, port)}")
    for study in study_views(db)[1]:  # every study shares the experiment: one view each shows its runs
        say(f"  study {study}: {runs_url(db, port, study=study)}")
    # MLflow 3.17 keeps the mode per browser and starts in GenAI mode (docs/mlflow.md, "Model training, not GenAI")
    say("a run page showing Traces, Judges and Evaluation runs: pick 'Model training' at the top left once")


def ui(args: list[str], env: dict, db: Path = REPO / "results" / "mlflow.db") -> int:
    """``bootstrap.py ui``: serve the runs with `mlflow ui` and print their addresses once the
    server answers (it takes 35-40 s to start here, and an address printed at once was refused)."""
    cmd = ui_command(args, db)
    say(" ".join(cmd))
    host, port = ui_address(args)
    return serve_until_stopped(cmd, env, ready=(host, port, lambda: announce_ui(db, port)))


def answers(host: str, port: str, timeout: float = 2.0) -> bool:
    """Whether an HTTP server answers on ``host:port``: any response counts (a 403 of MLflow's
    host check, a 404 under a --static-prefix), a refused or silent connection does not.
    http.client, not urllib: a proxy set in the environment must not answer for it."""
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        connection.request("GET", "/health")
        connection.getresponse().read()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def wait_until_answering(proc: subprocess.Popen, host: str, port: str, stopping, every: float = 10.0) -> int | None:
    """Until the server ``proc`` answers on ``port`` (None), or its exit code when it ends first
    (said in one line, unless it was stopped from here); a line every ``every`` seconds meanwhile."""
    say(f"waiting for the MLflow server to answer on port {port} ...")
    start = time.monotonic()
    next_line = start + every
    while (code := proc.poll()) is None:
        if answers(host, port):
            return None
        if time.monotonic() >= next_line:
            say(f"  still waiting for the MLflow server on port {port} ({time.monotonic() - start:.0f} s)")
            next_line += every
        time.sleep(0.5)
    if not stopping():
        how = f"exit code {code}" if code >= 0 else f"exit code {code}: killed by {signal.Signals(-code).name}"
        say(f"the MLflow server stopped before it answered on port {port} ({how}); its output is above")
    return code


def serve_until_stopped(cmd: list[str], env: dict | None = None, grace: float = 10.0,
                        ready: tuple[str, str, object] | None = None) -> int:
    """Run ``cmd`` (``mlflow ui``, which starts a server and its workers) in a process group of its
    own, and end the whole group when this process is stopped (SIGTERM, SIGHUP, or Ctrl-C, which
    no longer reaches the group from the terminal): a plain subprocess.call left `mlflow ui` and
    its workers running after a SIGTERM. A member still there ``grace`` seconds later is killed.
    ``ready`` = (host, port, announce): ``announce()`` is called once the server answers there."""
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, start_new_session=True)
    stopped = []

    def stop(signum, frame):
        stopped.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        code = None
        if ready is not None:
            host, port, announce = ready
            code = wait_until_answering(proc, host, port, lambda: bool(stopped))
            if code is None:
                announce()
        if code is None:
            code = proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        # the server's workers may outlive it (its own SIGTERM handling, or a crash): the group goes too
        deadline = time.monotonic() + grace
        while group_alive(proc.pid) and time.monotonic() < deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    return code


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is alive (zombies aside)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[2] == str(pgid) and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
            return True
    return False


def snakemake_running_in(workdir: Path) -> bool:
    """Whether a snakemake process (other than this one) has ``workdir`` as its directory."""
    workdir = workdir.resolve()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")[:2]
            if not any(Path(a.decode(errors="replace")).name == "snakemake" for a in argv):
                continue
            if Path(os.readlink(proc / "cwd")).resolve() == workdir:
                return True
        except OSError:  # the process ended, or is not ours to inspect
            continue
    return False


def clear_stale_lock(workdir: Path, snakemake: str, args: list[str], env: dict | None = None) -> bool:
    """A run killed by a signal or a power loss leaves Snakemake's lock behind, and the next
    start refuses to run until `snakemake --unlock`. When no snakemake runs in ``workdir``,
    the lock is stale: remove it the way Snakemake does. Returns whether it unlocked."""
    locks = workdir / ".snakemake" / "locks"
    if not (locks.is_dir() and any(locks.iterdir())) or snakemake_running_in(workdir):
        return False
    say("the previous run left its lock behind (killed?) and no snakemake runs here: unlocking")
    subprocess.run([snakemake, "--unlock", *args], cwd=workdir, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return True


def thread_failure_hint(line: str) -> str | None:
    """What to do when Snakemake itself could not start a thread: under a small memory or process
    limit that is how running out shows, without a word about memory. The words are the
    Snakefile's own (rankstudy.util.memory, standard library only), which says them itself when
    the workflow got as far as loading."""
    if "can't start new thread" not in line:
        return None
    sys.path.insert(0, str(REPO / "src"))
    from rankstudy.util.memory import thread_start_message

    return thread_start_message().removeprefix("rankstudy: ")


def configfiles_of(args: list[str]) -> list[str]:
    """The files given to Snakemake's ``--configfile`` (or ``--configfiles``) in ``args``."""
    files, taking = [], False
    for arg in args:
        option, _, value = arg.partition("=")
        if option in ("--configfile", "--configfiles"):
            taking = not value
            files += [value] if value else []
        elif arg.startswith("-"):
            taking = False
        elif taking:
            files.append(arg)
    return files


def check_configfiles(args: list[str], env: dict) -> int:
    """Snakemake reads ``--configfile`` files before the Snakefile runs, and says of bad YAML only
    "Config file is not valid JSON or YAML": check them first, so that the message names the file
    and line (rankstudy.pipeline.configfiles). Returns the check's exit code."""
    files = configfiles_of(args)
    if not files:
        return 0
    return subprocess.call([str(BIN / "python"), "-m", "rankstudy.pipeline.configfiles", *files], cwd=REPO, env=env)


def relay(lines, out) -> str | None:
    """Pass Snakemake's lines to ``out`` as they come. Its terminal is already short: the default
    profile (profiles/default) names rankstudy's logger plugin (rankstudy.pipeline.terminal), the
    same for plain snakemake as here. Returns the hint for a thread failure, if any."""
    hint, said = None, False
    for line in lines:
        out.write(line)
        out.flush()
        hint = hint or thread_failure_hint(line)
        said = said or line.startswith("rankstudy: out of memory")  # the workflow said it already
    return None if said else hint


def run_snakemake(cmd: list[str], env: dict) -> int:
    """Snakemake with its output passed through line by line, and a hint at the end when it
    failed for want of threads."""
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    # Ctrl-C reaches snakemake from the terminal (same process group): keep relaying what it
    # says while it stops its jobs, and end with its exit code (ignored only here, after the
    # start, as a child would inherit the ignoring)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        hint = relay(proc.stdout, sys.stdout)
        code = proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    if code and hint:
        say(hint)
    return code


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "ui", "setup"}:
        print(__doc__)
        return 2
    ensure_env()
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # OpenMP threads sleep when idle: no spinning on a shared machine
    full = "--full-output" in argv[1:]
    if full:  # the bootstrap's own flag: Snakemake's own terminal, job blocks and all (no default profile)
        argv = [argv[0], "--workflow-profile", "none", *(a for a in argv[1:] if a != "--full-output")]
    if argv[0] == "run":
        cores = os.environ.get("CORES", "2")
        if sys.stdout.isatty():  # Snakemake writes to a pipe here, but its lines reach a terminal
            env.setdefault(REFRESH_ENV, TERMINAL_REFRESH)
        if code := check_configfiles(argv[1:], env):
            return code
        clear_stale_lock(REPO, str(BIN / "snakemake"), argv[1:], env)
        # outputs a killed run left half-written are redone rather than refused
        cmd = [str(BIN / "snakemake"), "--cores", cores, "--rerun-incomplete", *argv[1:]]
    elif argv[0] == "test":
        cmd = [str(BIN / "python"), "-m", "pytest", *argv[1:]]
    elif argv[0] == "ui":
        return ui(argv[1:], env)
    else:
        return 0
    say(" ".join(cmd))
    if argv[0] == "run":
        return run_snakemake(cmd, env)
    return subprocess.call(cmd, cwd=REPO, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
