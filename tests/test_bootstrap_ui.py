"""`python3 setup/bootstrap.py ui` stopped with SIGTERM (a service manager, `kill`, a closed
terminal's SIGHUP) left `mlflow ui` and its server workers running: the UI is now served in a
process group of its own, which the bootstrap ends with itself. It printed the runs' address
35-40 s before the server answered (the browser's ERR_CONNECTION_REFUSED): it now prints it once
the server answers, and says so when the server ends first (issue 45.5)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from mlflow_rest import free_port, wait_for_health

REPO = Path(__file__).resolve().parents[1]
MLFLOW = str(Path(sys.executable).with_name("mlflow"))
# the bootstrap's own function, run as its `ui` command runs it, in a process of its own
SERVE = ("import importlib.util, sys\n"
         "spec = importlib.util.spec_from_file_location('bootstrap', sys.argv[1])\n"
         "bootstrap = importlib.util.module_from_spec(spec)\n"
         "spec.loader.exec_module(bootstrap)\n"
         "sys.exit(bootstrap.serve_until_stopped(sys.argv[2:]))\n")


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_ui_stopped_with_sigterm_leaves_no_mlflow_process(tmp_path):
    port = free_port()
    cmd = [MLFLOW, "ui", "--backend-store-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", "--host", "127.0.0.1",
           "--port", str(port), "--workers", "1"]
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    with open(tmp_path / "ui.log", "w") as log:
        ui = subprocess.Popen([sys.executable, "-c", SERVE, str(REPO / "setup" / "bootstrap.py"), *cmd],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    served: set[int] = set()
    try:
        wait_for_health(f"http://127.0.0.1:{port}", ui, timeout=180, log=tmp_path / "ui.log")
        served = descendants(ui.pid)
        assert any("mlflow" in command_of(pid) for pid in served), [command_of(p) for p in served]
        ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=60)
        deadline = time.monotonic() + 15
        while any(alive(pid) for pid in served) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [command_of(pid) for pid in served if alive(pid)]
        assert not left, f"left running after SIGTERM: {left}"
    finally:
        for pid in served | descendants(ui.pid) | {ui.pid}:  # whatever this test started
            if not alive(pid):
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# `bootstrap.ui(args, env, db)`, as `bootstrap.py ui` runs it; with a command in argv[2], that
# command stands in for `mlflow ui` (a server that takes its time, or one that fails)
UI = ("import importlib.util, json, os, sys\n"
      "from pathlib import Path\n"
      "spec = importlib.util.spec_from_file_location('bootstrap', sys.argv[1])\n"
      "bootstrap = importlib.util.module_from_spec(spec)\n"
      "spec.loader.exec_module(bootstrap)\n"
      "stand_in = json.loads(sys.argv[2])\n"
      "if stand_in:\n"
      "    bootstrap.ui_command = lambda args, db: stand_in\n"
      "sys.exit(bootstrap.ui(sys.argv[4:], dict(os.environ), Path(sys.argv[3])))\n")
# a web server that starts listening only after a delay, as `mlflow ui` does
SLOW_SERVER = ("import http.server, sys, time\n"
               "time.sleep(float(sys.argv[2]))\n"
               "http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), "
               "http.server.SimpleHTTPRequestHandler).serve_forever()\n")


def start_ui(db: Path, port: int, stand_in: list[str] | None):
    """The bootstrap's `ui` in a process of its own, its lines read as they come: (process, a list
    of (seconds since the start, line) that fills as it prints, when it started)."""
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    ui = subprocess.Popen([sys.executable, "-c", UI, str(REPO / "setup" / "bootstrap.py"), json.dumps(stand_in or []),
                           str(db), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[tuple[float, str]] = []

    def read():
        for line in ui.stdout:
            lines.append((time.monotonic() - started, line.rstrip("\n")))

    threading.Thread(target=read, daemon=True).start()
    return ui, lines


def wait_for_line(ui, lines, start: str, timeout: float) -> tuple[float, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [(t, line) for t, line in list(lines) if line.startswith(start)]
        if found:
            return found[0]
        if ui.poll() is not None and not found:
            time.sleep(0.5)  # the reader's last lines
            found = [(t, line) for t, line in list(lines) if line.startswith(start)]
            assert found, f"ended ({ui.returncode}) without {start!r}: {[line for _, line in lines]}"
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no {start!r} in {timeout} s: {[line for _, line in lines]}")


def end(ui) -> None:
    """Stop what the test started: the bootstrap, which ends its server's group with itself."""
    if ui.poll() is None:
        ui.send_signal(signal.SIGTERM)
        try:
            ui.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(ui.pid, signal.SIGKILL)
            ui.wait()


def answering(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def test_the_address_is_printed_once_the_server_answers(tmp_path):
    port, delay = free_port(), 4.0
    ui, lines = start_ui(tmp_path / "mlflow.db", port, [sys.executable, "-c", SLOW_SERVER, str(port), str(delay)])
    try:
        waited, waiting = wait_for_line(ui, lines, "[bootstrap] waiting for the MLflow server", 60)
        assert waiting == f"[bootstrap] waiting for the MLflow server to answer on port {port} ..."
        at, line = wait_for_line(ui, lines, "[bootstrap] open ", 60)
        assert answering(port), "the address was printed, but nothing answers on its port"
        assert at >= delay > waited, (at, waited)  # not before the server could answer
        assert line == f"[bootstrap] open http://127.0.0.1:{port}/"  # no store yet: the UI's front page
        assert ui.poll() is None  # and it goes on serving
    finally:
        end(ui)
    assert not answering(port)


def test_a_server_that_ends_before_answering_is_said_with_its_exit_code(tmp_path):
    port = free_port()
    ui, lines = start_ui(tmp_path / "mlflow.db", port, [sys.executable, "-c", "import sys; sys.exit(3)"])
    try:
        assert ui.wait(timeout=60) == 3
        _, line = wait_for_line(ui, lines, "[bootstrap] the MLflow server", 10)
        assert line == (f"[bootstrap] the MLflow server stopped before it answered on port {port} (exit code 3); "
                        "its output is above")
        assert not any(text.startswith("[bootstrap] open") for _, text in lines)
    finally:
        end(ui)


def test_mlflow_ui_answers_when_the_bootstrap_prints_its_address(tmp_path):
    """The real `mlflow ui` on a real store: the runs page answers when its address is printed."""
    from mlflow.tracking import MlflowClient

    db = tmp_path / "mlflow.db"
    MlflowClient(f"sqlite:///{db}").create_experiment("rankstudy", artifact_location=(tmp_path / "art").as_uri())
    port = free_port()
    ui, lines = start_ui(db, port, None)
    try:
        _, line = wait_for_line(ui, lines, "[bootstrap] open ", 240)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as response:
            assert response.status == 200
        assert "#/experiments/" in line and "workflowType=machine_learning" in line
        waiting = [text for _, text in lines if text.startswith("[bootstrap] waiting")]
        assert waiting == [f"[bootstrap] waiting for the MLflow server to answer on port {port} ..."]
    finally:
        end(ui)
