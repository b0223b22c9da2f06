"""`toolproof serve toolproof.examples.wholesaler:toolset` in a real subprocess, driven by the official SDK client over
stdio and over streamable HTTP (loopback, a free port picked by the server)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

from tests.mcp_servers.harness import http_server, toolproof_stdio
from toolproof import CallContext, ErrorClass, Runner
from toolproof.examples.wholesaler import toolset as wholesaler_toolset
from toolproof.mcp import META_CONVERSATION_ID, META_PRINCIPAL, import_tools

pytestmark = pytest.mark.timeout(90)
TARGET = "toolproof.examples.wholesaler:toolset"


@asynccontextmanager
async def session(transport: str, *args: str) -> AsyncIterator[Client]:
    if transport == "stdio":
        async with Client(toolproof_stdio(*args), read_timeout_seconds=30) as client:
            yield client
    else:
        async with http_server(*args) as url, Client(url, read_timeout_seconds=30) as client:
            yield client


def _meta(conversation: str, principal: str | None = "B-17") -> dict[str, Any]:
    meta: dict[str, Any] = {META_CONVERSATION_ID: conversation}
    if principal:
        meta[META_PRINCIPAL] = principal
    return meta


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_tools_list_has_strict_inputs_envelope_outputs_and_annotations(transport: str) -> None:
    async with session(transport, "serve", TARGET) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert list(listed) == wholesaler_toolset.names
    place = listed["place_order"]
    assert place.input_schema == wholesaler_toolset.get("place_order").input_schema
    assert place.input_schema["additionalProperties"] is False
    assert "conversation_id" not in json.dumps(place.input_schema)  # ids come from the context, not the model
    assert place.output_schema is not None
    success, failure = place.output_schema["oneOf"]
    assert set(success["properties"]) == {"ok", "result", "meta"} and success["properties"]["ok"] == {"const": True}
    assert failure["properties"]["ok"] == {"const": False}
    assert place.title == "Place order"
    assert place.annotations is not None
    assert (place.annotations.read_only_hint, place.annotations.destructive_hint,
            place.annotations.idempotent_hint) == (False, True, True)
    price = listed["get_today_price"].annotations
    assert price is not None and (price.read_only_hint, price.destructive_hint) == (True, False)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_calls_return_the_envelope_and_ids_come_from_meta(transport: str) -> None:
    async with session(transport, "serve", TARGET) as client:
        ok = await client.call_tool("get_today_price", {"crop": "onion"})
        assert not ok.is_error
        assert ok.structured_content["ok"] is True and ok.structured_content["meta"]["tool"] == "get_today_price"
        assert json.loads(ok.content[0].text) == ok.structured_content  # type: ignore[union-attr]

        enum = await client.call_tool("get_today_price", {"crop": "mango"})
        assert enum.is_error
        err = enum.structured_content["error"]
        assert (err["class"], err["field"], err["received"]) == ("invalid_argument", "crop", "mango")
        assert "onion" in err["allowed_values"]
        assert json.loads(enum.content[0].text) == enum.structured_content  # type: ignore[union-attr]

        # An id smuggled in the arguments is refused, never used.
        smuggled = await client.call_tool(
            "place_order",
            {"crop": "onion", "quantity_kg": 40, "delivery_date": "2031-01-15", "conversation_id": "x"},
            meta=_meta("conv-a"),  # type: ignore[arg-type]
        )
        assert smuggled.is_error and smuggled.structured_content["error"]["field"] == "conversation_id"

        order = {"crop": "onion", "quantity_kg": 40, "delivery_date": "2031-01-15"}
        first = await client.call_tool("place_order", order, meta=_meta("conv-a"))  # type: ignore[arg-type]
        assert first.structured_content["result"]["note"] == "New order placed", first.structured_content
        again = await client.call_tool("place_order", order, meta=_meta("conv-a"))  # type: ignore[arg-type]
        # The journal replays the first result: the handler is not called again.
        assert again.structured_content["meta"]["replayed"] is True
        assert again.structured_content["result"] == first.structured_content["result"]
        assert again.structured_content["result"]["order_id"] == first.structured_content["result"]["order_id"]
        other = await client.call_tool("place_order", order, meta=_meta("conv-b"))  # type: ignore[arg-type]
        assert other.structured_content["result"]["note"] == "New order placed"

        nobody = await client.call_tool("place_order", order, meta=_meta("conv-c", principal=None))  # type: ignore[arg-type]
        assert nobody.is_error and nobody.structured_content["error"]["class"] == "permission_denied"

        with pytest.raises(MCPError) as unknown:
            await client.call_tool("order_v2", {"crop": "onion"})
        assert unknown.value.code == -32602 and "order_v2" in unknown.value.message


async def test_import_tools_over_http_keeps_a_toolproof_envelope() -> None:
    async with http_server("serve", TARGET) as url, await import_tools(url, name="shop", trusted=True) as tools:
        assert tools.names == wholesaler_toolset.names
        assert tools.get("get_today_price").effect == "read"
        assert tools.get("place_order").output_schema == wholesaler_toolset.get("place_order").output_schema
        runner = Runner(tools)
        price = await runner.call("get_today_price", {"crop": "jeera"})
        assert price.ok and price.result["crop"] == "jeera"
        missing = await runner.call("get_order_status", {"order_id": 999})
        # No principal reaches the upstream, so it answers permission_denied: kept, code and all.
        assert missing.error is not None
        assert (missing.error.error_class, missing.error.code) == (ErrorClass.PERMISSION_DENIED, "NO_BUYER")
        # With a principal in the context, it is forwarded in `_meta`: the upstream now looks the order up.
        signed_in = await runner.call("get_order_status", {"order_id": 999}, context=CallContext("c", "B-17"))
        assert signed_in.error is not None
        assert (signed_in.error.error_class, signed_in.error.code) == (ErrorClass.NOT_FOUND, "ORDER_NOT_FOUND")
        assert signed_in.error.field == "order_id"
        bad = await runner.call("get_today_price", {"crop": "jeera", "grade": "Z"})
        assert bad.error_class is ErrorClass.INVALID_ARGUMENT  # refused here, before the wire


async def test_an_http_upstream_that_goes_away_is_a_transport_failure_not_a_hang() -> None:
    server = http_server("serve", TARGET)
    url = await server.__aenter__()
    try:
        tools = await import_tools(url, name="shop", timeout_s=5)
    finally:
        await server.__aexit__(None, None, None)  # the upstream is gone from here on
    async with tools:
        runner = Runner(tools)
        first = await runner.call("get_today_price", {"crop": "onion"})
        # Untrusted, so a write: the connection broke with the call possibly sent.
        assert first.error_class in (ErrorClass.OUTCOME_UNKNOWN, ErrorClass.TRANSIENT_UPSTREAM)
        # The same write again is held by the journal until a person reconciles the first one.
        held = await runner.call("get_today_price", {"crop": "onion"})
        assert held.error_class is ErrorClass.OUTCOME_UNKNOWN
        assert held.error is not None and held.error.idempotency_key
        # In another conversation nothing can be sent at all: known not done, so transient even for a write.
        again = await runner.call("get_today_price", {"crop": "onion"}, context=CallContext("conv-2"))
        assert again.error is not None and again.error.error_class is ErrorClass.TRANSIENT_UPSTREAM
        assert "could not be reached" in again.error.message


async def test_a_tool_that_prints_to_stdout_does_not_corrupt_the_stdio_wire() -> None:
    async with session("stdio", "serve", "tests.mcp_servers.noisy_toolset:toolset") as client:
        for text in ("one", "two"):
            result = await client.call_tool("shout", {"text": text})
            assert result.structured_content["result"] == text.upper()


@pytest.mark.parametrize(("transport", "mode"), [("stdio", "auto"), ("stdio", "legacy"), ("http", "legacy"),
                                               ("http", "auto")])
async def test_without_a_conversation_id_the_session_is_not_a_conversation(transport: str, mode: str) -> None:
    """Whatever the transport and protocol (a 2025-11-25 session, the sessionless 2026-07-28 HTTP), the same
    order again with no conversation in `_meta` is neither replayed (merged) nor placed: a question naming the
    first order."""
    order = {"crop": "cotton_seed", "quantity_kg": 20, "delivery_date": "2031-03-03"}
    meta = {META_PRINCIPAL: "B-17"}
    if transport == "stdio":
        opened: Any = Client(toolproof_stdio("serve", TARGET), mode=mode, read_timeout_seconds=30)  # type: ignore[arg-type]
        async with opened as client:
            replies = [(await client.call_tool("place_order", order, meta=meta)).structured_content  # type: ignore[arg-type]
                       for _ in range(2)]
    else:
        async with http_server("serve", TARGET) as url, Client(url, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            replies = [(await client.call_tool("place_order", order, meta=meta)).structured_content  # type: ignore[arg-type]
                       for _ in range(2)]
    first, second = replies
    assert first["result"]["note"] == "New order placed"
    assert second["ok"] is False and not second["meta"].get("replayed"), second
    assert (second["error"]["class"], second["error"]["code"]) == ("needs_clarification",
                                                                   "REPEAT_WITHOUT_CONVERSATION")
    assert second["error"]["state"]["idempotency_key"] == first["meta"]["idempotency_key"]
