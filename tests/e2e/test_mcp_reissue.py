"""MCP 2026-07-28's own retry path: a response stream that breaks loses the request, and the client "MUST
re-issue it as a new request with a new request ID". Nothing in the protocol tells the server that the
request already ran; toolproof keys the write on who is asking and what they asked, never on the JSON-RPC id.

`toolproof serve --http` runs in a real subprocess on the faulty desk (a SQLite `orders` table, every insert
counted), the official SDK `Client` talks to it through a TCP proxy that drops the first `tools/call` reply
after the server wrote it (the effect happened) and aborts both connections: a broken stream. The client
then re-issues the call, as the spec says, under a new request id.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.integrations.conftest import BUYER, ORDER, FaultyShop
from tests.mcp_servers.harness import http_server
from toolproof.integrations.meta import mcp_meta
from toolproof.mcp._repeat import ENVELOPE_META
from toolproof.mcp._server import CONVERSATION_HEADER, OPERATIONS_EXTENSION

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
TARGET = "tests.integrations.faulty_desk:toolset"


class CuttingProxy:
    """Forwards TCP both ways; the first reply to a `tools/call` is held back until its JSON-RPC `result`
    has arrived from the server, then both connections are aborted and the reply never reaches the client."""

    def __init__(self, host: str, port: int, marker: bytes = b"tools/call") -> None:
        self.upstream = (host, port)
        self.marker = marker
        self.cuts = 0
        self.calls = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        cut_this = asyncio.Event()

        async def to_server() -> None:
            while data := await reader.read(65536):
                if b"tools/call" in data:
                    self.calls += 1
                    if self.cuts == 0 and self.marker in data:
                        cut_this.set()
                up_writer.write(data)
                await up_writer.drain()

        async def to_client() -> None:
            held = b""
            while data := await up_reader.read(65536):
                if cut_this.is_set() and self.cuts == 0:
                    held += data
                    if b'"result"' in held:  # the server answered: the effect is behind us
                        self.cuts += 1
                        writer.transport.abort()
                        up_writer.transport.abort()
                        return
                    continue
                writer.write(data)
                await writer.drain()

        tasks = [asyncio.create_task(to_server()), asyncio.create_task(to_client())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for w in (writer, up_writer):
            w.close()


@asynccontextmanager
async def cut_once(url: str, marker: bytes = b"tools/call") -> AsyncIterator[tuple[str, CuttingProxy]]:
    """The server's URL behind a `CuttingProxy` (cutting the first `tools/call` whose request has `marker`)."""
    parts = urlsplit(url)
    proxy = CuttingProxy(parts.hostname or "127.0.0.1", parts.port or 80, marker)
    listener = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield urlunsplit((parts.scheme, f"127.0.0.1:{port}", parts.path, "", "")), proxy
    finally:
        listener.close()


@asynccontextmanager
async def desk(tmp_path: Path) -> AsyncIterator[tuple[str, FaultyShop]]:
    shop = FaultyShop(tmp_path / "orders.sqlite3", lost_replies=0)
    env = {"FAULTY_SHOP_PATH": str(shop.path), "FAULTY_LOST_REPLIES": "0",
           "TOOLPROOF_STORE": f"sqlite:///{tmp_path / 'journal.sqlite3'}"}
    try:
        async with http_server("serve", TARGET, env=env) as url:
            yield url, shop
    finally:
        shop.close()


async def call_once(url: str, meta: dict[str, Any], tool: str = "place_order") -> None:
    async with Client(url, read_timeout_seconds=60) as client:
        assert client.protocol_version == "2026-07-28"
        await client.call_tool(tool, ORDER, meta=meta)  # type: ignore[arg-type]


async def call_cut_then_reissue(url: str, meta: dict[str, Any]) -> tuple[CuttingProxy, dict[str, Any]]:
    """The first call loses its reply to a broken stream; the same call is re-issued under a new id.

    The SDK's client ends with the broken stream (its transport's task group raises), so the re-issue goes
    out on a new `Client`: under 2026-07-28 no session ties them, each request stands alone.
    """
    async with cut_once(url) as (proxied, proxy):
        with pytest.raises(BaseException) as broken:
            await call_once(proxied, meta)
        assert "disconnected" in repr(getattr(broken.value, "exceptions", broken.value))
        assert proxy.cuts == 1
        async with Client(proxied, read_timeout_seconds=30) as client:
            again = await client.call_tool("place_order", ORDER, meta=meta)  # type: ignore[arg-type]
    assert proxy.calls == 2
    assert isinstance(again.structured_content, dict)
    return proxy, again.structured_content


async def test_a_reissued_request_in_a_named_conversation_replays(tmp_path: Path) -> None:
    async with desk(tmp_path) as (url, shop):
        _, again = await call_cut_then_reissue(url, mcp_meta("chat-1", principal=BUYER))
        assert again["ok"] is True and again["meta"]["replayed"] is True, again
        assert again["result"]["note"] == "New order placed"  # the first attempt's own result
        assert shop.inserts == 1 and shop.count_orders() == 1


async def test_a_reissued_request_naming_no_conversation_is_asked_about(tmp_path: Path) -> None:
    """A client that does not speak the extension: one row, and a question naming the order that exists."""
    async with desk(tmp_path) as (url, shop):
        _, again = await call_cut_then_reissue(url, mcp_meta(None, principal=BUYER))
        assert (again["error"]["class"], again["error"]["code"]) == ("needs_clarification",
                                                                     "REPEAT_WITHOUT_CONVERSATION"), again
        assert shop.inserts == 1 and shop.count_orders() == 1


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_extension_is_announced_and_older_clients_still_work(tmp_path: Path, mode: str) -> None:
    """2026-07-28 clients read the extension in the server's capabilities; a 2025-11-25 client (no
    `extensions` in that revision) sees none and gets the same behaviour from the same `_meta` keys."""
    async with desk(tmp_path) as (url, shop), Client(url, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
        settings = (client.server_capabilities.extensions or {}).get(OPERATIONS_EXTENSION)
        if mode == "legacy":
            assert client.protocol_version < "2026-07-28" and settings is None
        else:
            assert settings is not None, client.server_capabilities
            assert settings["meta"]["conversation"] == "dev.toolproof/conversation_id"
            assert "place_order" in settings["journaledTools"]
            assert "get_today_price" not in settings["journaledTools"]
        first = await client.call_tool("place_order", ORDER, meta=mcp_meta("chat-2", principal=BUYER))  # type: ignore[arg-type]
        again = await client.call_tool("place_order", ORDER, meta=mcp_meta("chat-2", principal=BUYER))  # type: ignore[arg-type]
        assert first.structured_content is not None and again.structured_content is not None
        assert again.structured_content["meta"]["replayed"] is True
        assert shop.count_orders() == 1


async def test_through_the_gateway_a_reissued_request_replays_and_the_ids_go_upstream(tmp_path: Path) -> None:
    """The gateway (over HTTP, in front of `toolproof serve --http`) announces the extension, replays the
    re-issued call from its own journal and forwards the conversation upstream: one row in the shop."""
    async with desk(tmp_path) as (upstream, shop):
        args = ("gateway", "--upstream", f"shop={upstream}", "--trust", "shop", "--prefix", "always")
        async with http_server(*args, timeout_s=60) as url:
            async with Client(url, read_timeout_seconds=60) as client:
                settings = (client.server_capabilities.extensions or {}).get(OPERATIONS_EXTENSION)
                assert settings is not None and "shop__place_order" in settings["journaledTools"], settings
            async with cut_once(url) as (proxied, proxy):
                with pytest.raises(BaseException) as broken:
                    await call_once(proxied, mcp_meta("chat-3", principal=BUYER), tool="shop__place_order")
                assert "disconnected" in repr(getattr(broken.value, "exceptions", broken.value))
                assert proxy.cuts == 1
                async with Client(proxied, read_timeout_seconds=60) as client:
                    again = await client.call_tool("shop__place_order", ORDER,
                                                   meta=mcp_meta("chat-3", principal=BUYER))  # type: ignore[arg-type]
        assert again.structured_content is not None and again.structured_content["meta"]["replayed"] is True
        assert shop.inserts == 1 and shop.count_orders() == 1


def answering(second: bool) -> Any:
    """An elicitation callback: the person answers "place another one?" with `second`."""
    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams) and "second" in params.requested_schema["properties"]
        return types.ElicitResult(action="accept", content={"second": second})
    return answer


async def ask_confirm_and_lose_the_reply(url: str, shop: FaultyShop, meta: dict[str, Any],
                                         second: dict[str, Any]) -> Any:
    """ORDER is booked; `second` is asked about inside the call (an `InputRequiredResult`, the envelope in its
    `_meta`); the person confirms, the SDK retries with `inputResponses` under a new id and that retry's
    reply is lost to a broken stream; then the whole call is made again. Returns its result."""
    async with Client(url, read_timeout_seconds=60, elicitation_callback=answering(True)) as client:
        first = await client.call_tool("place_order", ORDER, meta=meta)  # type: ignore[arg-type]
        asked = await client.session.call_tool("place_order", second, meta=meta,  # type: ignore[arg-type]
                                               allow_input_required=True)
    assert first.structured_content is not None and first.structured_content["ok"] is True
    assert isinstance(asked, types.InputRequiredResult) and asked.input_requests, asked
    assert (asked.meta or {})[ENVELOPE_META]["error"]["class"] == "needs_clarification"
    assert shop.count_orders() == 1
    async with cut_once(url, marker=b"inputResponses") as (proxied, proxy):
        with pytest.raises(BaseException) as broken:
            async with Client(proxied, read_timeout_seconds=60, elicitation_callback=answering(True)) as client:
                await client.call_tool("place_order", second, meta=meta)  # type: ignore[arg-type]
        assert "disconnected" in repr(getattr(broken.value, "exceptions", broken.value))
        assert proxy.cuts == 1 and shop.count_orders() == 2  # the confirmed second was placed, its reply lost
        async with Client(proxied, read_timeout_seconds=60, elicitation_callback=answering(True)) as client:
            return await client.call_tool("place_order", second, meta=meta)  # type: ignore[arg-type]


async def test_an_input_required_retry_cut_and_reissued_replays_the_confirmed_second(tmp_path: Path) -> None:
    """In a named conversation, the same order with another quantity after the first was placed is asked
    about (`ALREADY_DONE_DIFFERENT_ARGS`); confirmed, it is placed once, and its re-issue replays it."""
    async with desk(tmp_path) as (url, shop):
        again = await ask_confirm_and_lose_the_reply(url, shop, mcp_meta("chat-4", principal=BUYER),
                                                     {**ORDER, "quantity_kg": 300})
        assert again.structured_content is not None and again.structured_content["meta"]["replayed"] is True
        assert again.structured_content["result"]["quantity_kg"] == 300
        assert shop.inserts == 2 and shop.count_orders() == 2


async def test_with_no_conversation_the_reissued_confirmed_second_is_not_placed_again(tmp_path: Path) -> None:
    """No conversation: the identical order is asked about (`REPEAT_WITHOUT_CONVERSATION`); after the cut,
    the re-issued confirmation finds the second placed and, with no conversation to tell a resend from
    another caller, says so (a question naming it) rather than replaying or placing a third."""
    async with desk(tmp_path) as (url, shop):
        again = await ask_confirm_and_lose_the_reply(url, shop, mcp_meta(None, principal=BUYER), ORDER)
        assert again.structured_content is not None, again
        assert again.structured_content["error"]["code"] == "REPEAT_WITHOUT_CONVERSATION"
        assert shop.inserts == 2 and shop.count_orders() == 2


async def test_declining_the_second_keeps_the_envelope_and_books_nothing(tmp_path: Path) -> None:
    meta = mcp_meta(None, principal=BUYER)
    async with desk(tmp_path) as (url, shop), Client(url, read_timeout_seconds=60,
                                                     elicitation_callback=answering(False)) as client:
        await client.call_tool("place_order", ORDER, meta=meta)  # type: ignore[arg-type]
        again = await client.call_tool("place_order", ORDER, meta=meta)  # type: ignore[arg-type]
        assert again.is_error and again.structured_content is not None
        assert again.structured_content["error"]["code"] == "REPEAT_WITHOUT_CONVERSATION"
        assert shop.inserts == 1 and shop.count_orders() == 1


async def test_a_client_that_cannot_send_meta_names_the_conversation_in_a_header(tmp_path: Path) -> None:
    """`Toolproof-Conversation-Id`, set once on the client's HTTP connection (what langchain-mcp-adapters'
    `headers=` can do; its tools cannot set `_meta`): the resend replays, another conversation books."""
    async def book(conversation: str) -> dict[str, Any]:
        transport = streamable_http_client(url, http_client=create_mcp_http_client(
            headers={CONVERSATION_HEADER: conversation}))
        async with Client(transport, read_timeout_seconds=60) as client:
            result = await client.call_tool("place_order", ORDER, meta=mcp_meta(None, principal=BUYER))  # type: ignore[arg-type]
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    async with desk(tmp_path) as (url, shop):
        first, again = await book("chat-6"), await book("chat-6")
        assert first["ok"] is True and again["meta"]["replayed"] is True, again
        assert shop.count_orders() == 1
        assert (await book("chat-7"))["result"]["note"] == "New order placed"
        assert shop.inserts == 2 and shop.count_orders() == 2
