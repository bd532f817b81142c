"""The MLflow REST API called with plain urllib, as a client on another machine would, and the
waiting for a server to answer (shared by tests/test_tracking.py, tests/test_tracking_server_e2e.py
and tests/test_logging_faults_e2e.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_health(url: str, server: subprocess.Popen, timeout: float, log=None) -> None:
    """Until ``url``/health answers 200; an error naming the server's end (and its ``log``'s tail)
    if it exits first, a TimeoutError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            tail = f": {log.read_text()[-3000:]}" if log is not None else ""
            raise RuntimeError(f"mlflow server exited with {server.returncode}{tail}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"mlflow server at {url} not healthy after {timeout} s")


def rest(url: str, endpoint: str, body: dict | None = None, timeout: float = 30) -> dict:
    """Call the MLflow REST API with plain urllib (GET without body, POST with)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}/api/2.0/mlflow/{endpoint}", data=data,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)
