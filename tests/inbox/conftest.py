"""A real inbox: `toolproof ui` as a subprocess on a free port, over a SQLite file or a PostgreSQL schema, and
Debian's Chromium driven by Playwright."""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._data import REPO_ROOT
from tests.fleet.conftest import pg_dsn, pg_schema, redis_prefix, shared_url  # noqa: F401 (the dashboard's breakers)
from tests.pg_support import drop_schema, postgres_server, unique_schema, with_schema
from toolproof.stores import MemoryStore, Store, open_store

CHROMIUM = "/usr/bin/chromium"
# Screenshots go to a scratch folder (tests never write into the checkout); to refresh the ones docs/inbox.md
# shows: TOOLPROOF_TEST_SCREENSHOTS=docs/inbox .venv/bin/python -m pytest tests/inbox/test_browser.py
SHOTS = REPO_ROOT / os.environ["TOOLPROOF_TEST_SCREENSHOTS"] if os.environ.get("TOOLPROOF_TEST_SCREENSHOTS") else (
    Path(tempfile.gettempdir()) / "toolproof-tests" / "inbox-screenshots")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'toolproof.sqlite3'}"
        return
    with postgres_server() as dsn:
        schema = unique_schema("tp_inbox")
        try:
            yield with_schema(dsn, schema)
        finally:
            drop_schema(dsn, schema)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """An empty store, opened in this process: in memory, a SQLite file, a PostgreSQL schema of its own."""
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "sqlite":
        store = open_store(f"sqlite:///{tmp_path / 'tp.sqlite3'}?synchronous=OFF")
        yield store
        store.close()
        return
    with postgres_server() as dsn:
        schema = unique_schema("tp_pages")
        store = open_store(with_schema(dsn, schema))
        try:
            yield store
        finally:
            store.close()
            drop_schema(dsn, schema)


def serve(store_url: str, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """Start `toolproof ui --port 0` and wait until it answers on the port it printed; (the process, its URL)."""
    from toolproof.stores import open_store

    open_store(store_url).close()  # the agents' store exists before the inbox opens it
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPROOF_")}
    env["PYTHONPATH"] = f"{REPO_ROOT / 'src'}{os.pathsep}{REPO_ROOT}"
    proc = subprocess.Popen([sys.executable, "-m", "toolproof", "ui", "--store", store_url, "--port", "0", *extra],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    said: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [said.put(line) for line in proc.stderr or ()], daemon=True).start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            line = said.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            break
        found = re.search(r"on (http://127\.0\.0\.1:(\d+))/", line)
        if found:
            assert found[2] != "0", line  # the real port, not the 0 asked for
            httpx.get(found[1] + "/api/version", timeout=10)
            return proc, found[1]
    proc.kill()
    raise RuntimeError(f"toolproof ui printed no address in 30 s (exit {proc.poll()})")


@pytest.fixture
def inbox(store_url: str) -> Iterator[str]:
    proc, base = serve(store_url)
    try:
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One browser per module: Playwright's sync API runs an event loop on this thread while it is open, so it
    must be closed before other modules' tests call `asyncio.run`."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()
