"""A real HTTP server on 127.0.0.1 (a free port) for the download tests, stopped on exit."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from http.server import ThreadingHTTPServer


@contextmanager
def serving(handler):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.url = lambda path: f"http://127.0.0.1:{srv.server_address[1]}/{path.lstrip('/')}"
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)
