"""langchain-mcp-adapters against `toolproof serve --http`: its tools cannot send `_meta`, so it names the
conversation (and the buyer) in the `Toolproof-Conversation-Id` / `Toolproof-Principal` headers of its
connection. It pins `mcp<2`, which clashes with the project's `mcp`, so it runs in its own environment
(`.venv/langchain-mcp`, built once from tests/langchain_mcp/requirements.txt) as a real subprocess; the server,
the journal and the example's `orders` table are real. Two bookings in one conversation: one row, the second
a replay; another conversation books its own."""

from __future__ import annotations

import asyncio
import fcntl
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.conftest import FaultyShop
from tests.mcp_servers.harness import REPO_ROOT, http_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
TARGET = "tests.integrations.faulty_desk:toolset"
HERE = REPO_ROOT / "tests" / "langchain_mcp"
ENV = REPO_ROOT / ".venv" / "langchain-mcp"


def adapters_python() -> Path:
    """The environment's interpreter, built on first use (under a lock: parallel runs share it)."""
    python = ENV / "bin" / "python"
    ENV.parent.mkdir(exist_ok=True)
    with open(ENV.parent / ".langchain-mcp.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ready = ENV / ".installed"
        requirements = HERE / "requirements.txt"
        if not ready.exists() or ready.read_text() != requirements.read_text():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(ENV)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "-r", str(requirements)], check=True)
            ready.write_text(requirements.read_text())
    return python


async def book_twice(url: str, conversation: str) -> list[dict[str, Any]]:
    proc = await asyncio.create_subprocess_exec(
        str(adapters_python()), str(HERE / "book_twice.py"), url, conversation,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=str(REPO_ROOT))
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()[-2000:]
    return [json.loads(block["text"]) for line in out.decode().splitlines() for block in json.loads(line)]


async def test_langchain_mcp_adapters_names_the_conversation_in_a_header(tmp_path: Path) -> None:
    await asyncio.to_thread(adapters_python)  # the first run builds the environment (about a minute)
    shop = FaultyShop(tmp_path / "orders.sqlite3", lost_replies=0)
    env = {"FAULTY_SHOP_PATH": str(shop.path), "FAULTY_LOST_REPLIES": "0",
           "TOOLPROOF_STORE": f"sqlite:///{tmp_path / 'journal.sqlite3'}"}
    try:
        async with http_server("serve", TARGET, env=env) as url:
            first, again = await book_twice(url, "chat-1")
            assert first["ok"] is True and first["result"]["note"] == "New order placed", first
            assert again["ok"] is True and again["meta"]["replayed"] is True, again
            assert shop.inserts == 1 and shop.count_orders() == 1
            other, _ = await book_twice(url, "chat-2")
            assert other["result"]["note"] == "New order placed"
            assert shop.inserts == 2 and shop.count_orders() == 2
    finally:
        shop.close()
