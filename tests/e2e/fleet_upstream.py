"""A loopback HTTP upstream for the fleet test: it answers 503 during an outage, 200 otherwise.

    python fleet_upstream.py PORT_FILE

`GET /outage?at=UNIX_TIME&seconds=T` schedules the outage; `GET /call?key=K&worker=W` is one call (its
effect is "applied" on 200); `GET /log` returns every request as `[unix_time, worker, key, status]`.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

LOG: list[list[Any]] = []
LOCK = threading.Lock()
OUTAGE = [float("inf"), 0.0]  # start (unix time), seconds


def handler() -> type[BaseHTTPRequestHandler]:
    class Upstream(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/log":
                with LOCK:
                    body = json.dumps(LOG).encode()
                return self._answer(200, body)
            now = time.time()
            query = parse_qs(url.query)
            if url.path == "/outage":
                OUTAGE[:] = [float(query["at"][0]), float(query["seconds"][0])]
                return self._answer(200, b"{}")
            status = 503 if OUTAGE[0] <= now < OUTAGE[0] + OUTAGE[1] else 200
            with LOCK:
                LOG.append([now, query["worker"][0], query["key"][0], status])
            return self._answer(status, b"{}")

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return Upstream


def main(port_file: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler())
    server.daemon_threads = True
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
