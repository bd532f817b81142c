"""`python3 setup/bootstrap.py ui` stopped with SIGTERM (a service manager, `kill`, a closed
terminal's SIGHUP) left `mlflow ui` and its server workers running: the UI is now served in a
process group of its own, which the bootstrap ends with itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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
