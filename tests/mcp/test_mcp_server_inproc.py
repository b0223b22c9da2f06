"""The served toolset in process (the SDK client on an in-memory transport): whatever arrives, the answer is
an envelope or, for an unknown tool, the JSON-RPC error; nothing crashes and nothing is dropped."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

from toolproof import Envelope, Runner
from toolproof.examples.wholesaler import Shop, build_toolset
from toolproof.mcp import create_server

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
ARGS = st.dictionaries(st.sampled_from(["crop", "grade", "days", "order_id", "quantity_kg", "delivery_date", "x", "ü"]),
                       JSON, max_size=5)
TOOLS = st.sampled_from(["get_today_price", "get_price_history", "check_stock", "place_order", "get_order_status",
                         "cancel_order"])


async def _call_all(calls: list[tuple[str, dict[str, Any]]]) -> list[Envelope]:
    shop = Shop()
    server = create_server(Runner(build_toolset(shop)))
    out = []
    async with Client(server) as client:
        for name, args in calls:
            result = await client.call_tool(name, args)
            envelope = Envelope.from_dict(result.structured_content)
            assert result.is_error == (not envelope.ok)
            assert envelope.meta.tool == name
            out.append(envelope)
    shop.close()
    return out


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(TOOLS, ARGS), min_size=1, max_size=12))
def test_any_arguments_get_an_envelope(calls: list[tuple[str, dict[str, Any]]]) -> None:
    envelopes = asyncio.run(_call_all(calls))
    assert len(envelopes) == len(calls)


def test_huge_and_deep_values_are_refused_with_an_envelope() -> None:
    deep: Any = "x"
    for _ in range(200):
        deep = {"a": deep}
    calls = [("get_today_price", {"crop": "onion" * 100_000}), ("get_today_price", {"crop": deep}),
             ("get_today_price", {"crop": "onion", "grade": "A", **{f"k{i}": i for i in range(500)}})]
    for envelope in asyncio.run(_call_all(calls)):
        assert envelope.error is not None and envelope.error.error_class.value == "invalid_argument"


async def test_unknown_tools_are_protocol_errors() -> None:
    async with Client(create_server(Runner(build_toolset(Shop())))) as client:
        for name in ("order_v2", "", "get_today_price ", "ü" * 70):
            with pytest.raises(MCPError) as raised:
                await client.call_tool(name, {})
            assert raised.value.code == -32602


async def test_a_result_names_this_server_on_2026_sessions_only() -> None:
    from mcp_types import SERVER_INFO_META_KEY

    from toolproof._version import __version__

    shop = Shop()
    server = create_server(Runner(build_toolset(shop)), name="shop")
    async with Client(server) as modern, Client(server, mode="legacy") as legacy:
        new = await modern.call_tool("get_today_price", {"crop": "onion"})
        again = await modern.call_tool("get_today_price", {"crop": "onion"})
        old = await legacy.call_tool("get_today_price", {"crop": "onion"})
    shop.close()
    assert new.meta == again.meta == {SERVER_INFO_META_KEY: {"name": "shop", "version": __version__}}
    assert SERVER_INFO_META_KEY not in (old.meta or {})  # a handshake-era result carries no such stamp
