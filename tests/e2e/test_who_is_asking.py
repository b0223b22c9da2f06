"""Who is asking, across processes: writes with no conversation source are never merged silently and never
placed twice. Real subprocesses, a durable SQLite journal, the example's `orders` table; over MCP, a client
that opens a new session (a new `toolproof serve` process) per call, with the official SDK client."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.integrations.conftest import BUYER, ORDER, FaultyShop, envelope_in
from tests.mcp_servers.harness import PY, REPO_ROOT, child_env
from toolproof.integrations.meta import mcp_meta

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
TARGET = "tests.integrations.faulty_desk:toolset"


@pytest.fixture
def lossy_shop(tmp_path: Path) -> Iterator[FaultyShop]:
    """The example's shop whose first order commits and then loses its reply."""
    shop = FaultyShop(tmp_path / "orders.sqlite3", lost_replies=1)
    yield shop
    shop.close()


def run_worker(orders: Path, store: str) -> dict[str, Any]:
    done = subprocess.run([PY, "-m", "tests.e2e.who_is_asking_worker", str(orders), store], cwd=REPO_ROOT,
                          env=child_env(), capture_output=True, text=True, timeout=60, check=True)
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def test_two_processes_with_no_conversation_do_not_merge(tmp_path: Path) -> None:
    orders, store = tmp_path / "orders.sqlite3", f"sqlite:///{tmp_path / 'journal.sqlite3'}"
    first, second = run_worker(orders, store), run_worker(orders, store)
    assert first["ok"] is True, first
    assert second["ok"] is False and not second["meta"].get("replayed"), second
    assert (second["error"]["class"], second["error"]["code"]) == ("needs_clarification",
                                                                   "REPEAT_WITHOUT_CONVERSATION")
    assert second["error"]["state"]["idempotency_key"] == first["meta"]["idempotency_key"]
    shop = FaultyShop(orders, lost_replies=0)
    try:
        assert shop.count_orders() == 1 and shop.inserts == 1
    finally:
        shop.close()


async def call_in_new_session(tmp_path: Path, shop: FaultyShop, meta: dict[str, Any] | None) -> dict[str, Any]:
    """One `tools/call` in its own MCP session, so in its own `toolproof serve` process."""
    env = child_env(FAULTY_SHOP_PATH=shop.path, FAULTY_LOST_REPLIES=str(shop.lost_replies),
                    TOOLPROOF_STORE=f"sqlite:///{tmp_path / 'journal.sqlite3'}")
    params = StdioServerParameters(command=PY, args=["-m", "toolproof", "serve", TARGET], env=env, cwd=str(REPO_ROOT))
    async with Client(params, read_timeout_seconds=30) as client:
        result = await client.call_tool("place_order", ORDER, meta=meta)  # type: ignore[arg-type]
    return envelope_in(result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.parametrize("meta", [mcp_meta(None, principal=BUYER), mcp_meta("chat-1", principal=BUYER)],
                         ids=["no-conversation", "conversation"])
async def test_a_session_per_call_client_with_no_conversation_never_places_the_resend(
        tmp_path: Path, lossy_shop: FaultyShop, meta: dict[str, Any] | None) -> None:
    lost = await call_in_new_session(tmp_path, lossy_shop, meta)
    resend = await call_in_new_session(tmp_path, lossy_shop, meta)
    assert lost["error"]["class"] == resend["error"]["class"] == "outcome_unknown", (lost, resend)
    assert resend["error"]["idempotency_key"] == lost["error"]["idempotency_key"]
    assert lossy_shop.inserts == 1 and lossy_shop.count_orders() == 1


async def test_a_session_per_call_client_asks_before_a_second_order(tmp_path: Path) -> None:
    """After a placed order, the same order from a new session with no conversation is a question, not a
    replay of someone else's order; the confirmed second one (occurrence in `_meta`) is placed."""
    shop = FaultyShop(tmp_path / "orders.sqlite3", lost_replies=0)
    try:
        buyer = mcp_meta(None, principal=BUYER)  # the example needs a buyer; no conversation
        placed = await call_in_new_session(tmp_path, shop, buyer)
        asked = await call_in_new_session(tmp_path, shop, buyer)
        assert placed["ok"] is True and asked["ok"] is False, (placed, asked)
        assert asked["error"]["code"] == "REPEAT_WITHOUT_CONVERSATION"
        assert shop.count_orders() == 1
        confirmed = await call_in_new_session(tmp_path, shop, mcp_meta(None, principal=BUYER, occurrence=1))
        assert confirmed["ok"] is True, confirmed
        assert shop.count_orders() == 2
    finally:
        shop.close()
