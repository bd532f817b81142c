#!/usr/bin/env python3
"""Quick start on a machine that has only Python >= 3.11 and git.

    python3 workflow/bootstrap.py run  [snakemake args...]   # default pipeline, end to end
    python3 workflow/bootstrap.py test [pytest args...]      # the test suite
    python3 workflow/bootstrap.py ui   [mlflow ui args...]   # browse the runs in MLflow's UI
    python3 workflow/bootstrap.py setup                      # only create/refresh ./.venv

Each creates (or reuses) ./.venv, installs rankstudy with its test and cluster extras when
pyproject.toml changed since the last install, then runs the command inside it
(`run` is snakemake with --cores $CORES, default 2, and --rerun-incomplete; it first removes
the lock a killed run left behind, when no snakemake runs here, and adds an estimate of the time
left after each of snakemake's progress lines). Only the standard library is used
here, because nothing else is installed yet. Afterwards `. .venv/bin/activate` puts
snakemake, pytest and mlflow on PATH for the commands of the README.
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
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
    if STAMP.exists() and STAMP.read_text().strip() == wanted:
        return
    say("installing rankstudy and its dependencies into .venv (first run takes a few minutes)")
    pip = [str(BIN / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
    subprocess.run(pip + ["--quiet", "--upgrade", "pip"], check=True)
    subprocess.run(pip + ["--quiet", "-e", f"{REPO}[test,cluster]"], check=True)
    STAMP.write_text(wanted)


def runs_url(db: Path, port: str, experiment: str = "rankstudy") -> str:
    """The UI's page of the experiment's training runs. MLflow 3 opens an experiment on its
    GenAI pages unless the URL asks for the machine-learning workflow."""
    base = f"http://127.0.0.1:{port}/"
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            row = con.execute("SELECT experiment_id FROM experiments WHERE name = ?", (experiment,)).fetchone()
    except sqlite3.Error:
        row = None
    if row is None:
        return base
    return f"{base}#/experiments/{row[0]}/runs?workflowType=machine_learning"


def ui_command(args: list[str], db: Path = REPO / "results" / "mlflow.db") -> list[str]:
    if not db.exists():
        sys.exit(f"{db} does not exist yet: run the pipeline first (python3 workflow/bootstrap.py run)")
    # MLflow recorded the artifacts' absolute folder: after results/ moved, point it at the new one
    subprocess.run([str(BIN / "python"), "-m", "rankstudy.tracking.relocate", str(db)], check=True)
    port = args[args.index("--port") + 1] if "--port" in args[:-1] else "5000"
    say(f"open {runs_url(db, port)}")
    return [str(BIN / "mlflow"), "ui", "--backend-store-uri", f"sqlite:///{db}", *args]


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


def _soft_limit(kind: int, unit: int = 1, suffix: str = "") -> str:
    soft = resource.getrlimit(kind)[0]
    return "unlimited" if soft == resource.RLIM_INFINITY else f"{soft // unit}{suffix}"


def thread_failure_hint(line: str) -> str | None:
    """What to do when Snakemake itself could not start a thread: under a small memory or process
    limit that is how running out shows, without a word about memory."""
    if "can't start new thread" not in line:
        return None
    return (f"snakemake could not start a thread: too little memory or too many processes for the limits it "
            f"runs under (ulimit -v {_soft_limit(resource.RLIMIT_AS, 2**20, ' MiB')}, ulimit -u "
            f"{_soft_limit(resource.RLIMIT_NPROC)}, or the container's memory limit). Raise them, or run fewer "
            f"jobs at once (CORES=1)")


def duration(seconds: float) -> str:
    """``45s``, ``3m05s``, ``2h07m``."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def progress_estimate(done: int, total: int, elapsed: float) -> str:
    """The line added after Snakemake's "N of M steps done": the time so far and the remaining
    steps at the mean pace of those done (steps differ in length, hence "about")."""
    so_far = f"{done} of {total} steps done in {duration(elapsed)}"
    if done <= 0 or done >= total:
        return so_far
    pace = elapsed / done
    return f"{so_far} ({pace:.1f} s per step): about {duration(pace * (total - done))} left"


PROGRESS = re.compile(r"\b(\d+) of (\d+) steps \([\d.]+%\) done")


def relay(lines, out, elapsed) -> str | None:
    """Write every line to ``out`` as it comes, each progress line followed by an estimate
    (``elapsed()``: seconds since the run started). Returns the hint for a thread failure, if any."""
    hint = None
    for line in lines:
        out.write(line)
        progress = PROGRESS.search(line)
        if progress:
            out.write(f"[bootstrap] {progress_estimate(int(progress[1]), int(progress[2]), elapsed())}\n")
        out.flush()
        hint = hint or thread_failure_hint(line)
    return hint


def run_snakemake(cmd: list[str], env: dict) -> int:
    """Snakemake with its output passed through line by line, an estimate of the time left after
    each progress line, and a hint at the end when it failed for want of threads."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    # Ctrl-C reaches snakemake from the terminal (same process group): keep relaying what it
    # says while it stops its jobs, and end with its exit code (ignored only here, after the
    # start, as a child would inherit the ignoring)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        hint = relay(proc.stdout, sys.stdout, lambda: time.monotonic() - started)
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
    if argv[0] == "run":
        cores = os.environ.get("CORES", "2")
        clear_stale_lock(REPO, str(BIN / "snakemake"), argv[1:], env)
        # outputs a killed run left half-written are redone rather than refused
        cmd = [str(BIN / "snakemake"), "--cores", cores, "--rerun-incomplete", *argv[1:]]
    elif argv[0] == "test":
        cmd = [str(BIN / "python"), "-m", "pytest", *argv[1:]]
    elif argv[0] == "ui":
        cmd = ui_command(argv[1:])
    else:
        return 0
    say(" ".join(cmd))
    if argv[0] == "run":
        return run_snakemake(cmd, env)
    return subprocess.call(cmd, cwd=REPO, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
