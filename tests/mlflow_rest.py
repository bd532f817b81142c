"""The MLflow REST API called with plain urllib, as a client on another machine would (shared by
tests/test_tracking.py and tests/test_tracking_server_e2e.py)."""

from __future__ import annotations

import json
import urllib.request


def rest(url: str, endpoint: str, body: dict | None = None, timeout: float = 30) -> dict:
    """Call the MLflow REST API with plain urllib (GET without body, POST with)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}/api/2.0/mlflow/{endpoint}", data=data,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)
