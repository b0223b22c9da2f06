"""mcp (official Python SDK): an `MCPServer` with `@server.tool()`, called by a real `mcp.Client` session over
the SDK's in-memory transport (`InMemoryTransport`: JSON-RPC messages over memory streams, no network).

MCP has no agent loop, so the scripted model is `simple_loop`: it reads the `CallToolResult` (its text
content, `isError`, `structuredContent`). MCPServer has no server-side tool timeout; scenario 5 uses the
client's `read_timeout_seconds` on `call_tool`, and a host that catches the client's exception shows the
model its text (how agent hosts surface MCP failures).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from benchmarks.peers._common import TIMEOUT_S, Observation, OrderBook, Reply, Scenario, make_place_order, simple_loop

NAME = "mcp MCPServer"
DIST = "mcp"


def available() -> bool:
    try:
        from mcp.server.mcpserver import MCPServer  # noqa: F401
    except ImportError:
        return False
    return True


def _server(fn: Any) -> Any:
    from mcp.server.mcpserver import MCPServer

    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # the server logs every rejected call with a traceback
    server = MCPServer("shop")
    server.tool()(fn)
    return server


def _reply(result: Any) -> Reply:
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    structured = result.structured_content is not None
    channel = "CallToolResult isError" if result.is_error else "CallToolResult"
    return Reply.from_text(channel, text, error=bool(result.is_error), structured=structured or None)


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    from mcp import Client
    from mcp.client._memory import InMemoryTransport

    obs = Observation(NAME, scenario.key)
    server = _server(make_place_order(book))
    async with Client(InMemoryTransport(server)) as client:
        listed = await client.list_tools()
        obs.schema_closed = listed.tools[0].input_schema.get("additionalProperties") is False

        async def send(args: dict[str, Any]) -> Reply:
            try:
                result = await client.call_tool("place_order", args,
                                                read_timeout_seconds=TIMEOUT_S if scenario.timeout else None)
            except Exception as exc:
                return Reply.from_text(f"client raised {type(exc).__name__}", str(exc), error=True)
            return _reply(result)

        await simple_loop(scenario, send, obs)
    return obs


def overhead_invokers(fn: Any, args: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """`MCPServer.call_tool(name, args)`: validation with the tool's pydantic model, the call (a plain `def` runs
    in a worker thread) and conversion to a `CallToolResult`; no session or transport."""
    server = _server(fn)
    name = fn.__name__

    async def call() -> Any:
        return await server.call_tool(name, args)

    return {"MCPServer.call_tool": ("async", call)}
