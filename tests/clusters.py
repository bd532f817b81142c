"""The real clusters some end-to-end tests need, as fixtures: a one-node SLURM cluster
(setup/cluster/local-slurm.sh, started by CI) and a PostgreSQL-backed MLflow tracking server
(setup/cluster/mlflow-server.sh, started here per module). Without one the tests skip, or fail
when CI requires it (RANKSTUDY_REQUIRE_SLURM, RANKSTUDY_REQUIRE_SERVER)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "setup" / "cluster" / "mlflow-server.sh"
START_HINT = "start one on this machine with: bash setup/cluster/local-slurm.sh start"
SUBMITTED = re.compile(r"Job \S+ has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")


def why_no_cluster() -> str | None:
    """None when a SLURM cluster answers, else what is wrong."""
    if shutil.which("sinfo") is None:
        return "`sinfo` is not on PATH"
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%P %a %t"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "`sinfo` did not answer within 30 s"
    if out.returncode != 0:
        said = (out.stderr or out.stdout).strip().splitlines()
        return f"`sinfo` failed: {said[-1] if said else f'exit code {out.returncode}'}"
    if not out.stdout.strip():
        return "`sinfo` lists no partition"
    return None


@pytest.fixture(scope="module")
def slurm_cluster():
    problem = why_no_cluster()
    if problem:
        if os.environ.get("RANKSTUDY_REQUIRE_SLURM") == "1":
            pytest.fail(f"RANKSTUDY_REQUIRE_SLURM=1 but no SLURM cluster answers: {problem}")
        pytest.skip(f"no SLURM cluster answers ({problem}); {START_HINT}")


def why_no_server() -> str | None:
    """None when the script can start a server here, else what is missing."""
    found = subprocess.run(["bash", str(SCRIPT), "find-postgres"], capture_output=True, text=True, timeout=60)
    if found.returncode != 0:
        return "PostgreSQL's binaries (initdb, pg_ctl, postgres, psql) are not installed (apt-get install postgresql)"
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        return "psycopg2 is not installed (pip install -e '.[cluster]')"
    return None


def script(state: Path, command: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), command], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "RANKSTUDY_MLFLOW_DIR": str(state)})


@pytest.fixture(scope="module")
def server(request):
    """A server started by the script in a state folder of its own, stopped (and the folder
    removed) at the end. Yields the environment the script says to export, and the folder."""
    problem = why_no_server()
    if problem:
        if os.environ.get("RANKSTUDY_REQUIRE_SERVER") == "1":
            pytest.fail(f"RANKSTUDY_REQUIRE_SERVER=1 but no tracking server can be started: {problem}")
        pytest.skip(f"no MLflow tracking server on PostgreSQL can be started here: {problem}")
    # not under pytest's tmp_path: PostgreSQL's unprivileged user must be able to enter it
    state = Path(tempfile.mkdtemp(prefix="rankstudy-mlflow-test-", dir="/tmp"))
    state.chmod(0o711)

    def stop():
        out = script(state, "stop", timeout=120)
        shutil.rmtree(state, ignore_errors=True)
        assert out.returncode == 0, out.stderr

    request.addfinalizer(stop)
    started = script(state, "start")
    assert started.returncode == 0, started.stderr
    env = dict(line.removeprefix("export ").split("=", 1) for line in started.stdout.splitlines())
    assert set(env) == {"MLFLOW_TRACKING_URI", "RANKSTUDY_MLFLOW_BACKEND_STORE_URI", "RANKSTUDY_TUNE_STORAGE"}, started.stdout
    assert env["RANKSTUDY_TUNE_STORAGE"].startswith("postgresql://") and env["RANKSTUDY_TUNE_STORAGE"].endswith("/optuna")
    assert env["MLFLOW_TRACKING_URI"].startswith("http://127.0.0.1:")
    assert env["RANKSTUDY_MLFLOW_BACKEND_STORE_URI"].startswith("postgresql://")
    # a second start finds the running server and prints the same lines
    again = script(state, "start", timeout=120)
    assert (again.returncode, again.stdout) == (0, started.stdout), again.stderr
    status = script(state, "status", timeout=60)
    assert status.returncode == 0 and "mlflow:     running" in status.stdout, status.stdout + status.stderr
    return env, state
