"""The MCP SDK's server with toolproof: `toolproof.mcp.create_server(runner)` (the low-level SDK `Server`
that `toolproof serve` runs) over the same Runner as the toolproof column, called through a real `mcp.Client`
session in memory, each call carrying the conversation in `_meta` (`dev.toolproof/conversation_id`), as
toolproof's MCP client sends it. The reply is the envelope in `structuredContent`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.peers._common import Observation, OrderBook, Reply, Scenario, simple_loop
from benchmarks.peers._toolproof import envelope_reply, runner_for

NAME = "mcp MCPServer with toolproof"
DIST = "mcp"
SUFFIX = " with toolproof"


def available() -> bool:
    try:
        from mcp.client._memory import InMemoryTransport  # noqa: F401

        import toolproof.mcp._server  # noqa: F401
    except ImportError:
        return False
    return True


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    from mcp import Client
    from mcp.client._memory import InMemoryTransport

    from toolproof.mcp._server import META_CONVERSATION_ID, create_server

    obs = Observation(NAME, scenario.key)
    runner = runner_for(scenario, book, tmp, obs, name="mcp")
    meta: Any = {META_CONVERSATION_ID: f"conv-{scenario.key}"}
    try:
        async with Client(InMemoryTransport(create_server(runner))) as client:

            async def send(args: dict[str, Any]) -> Reply:
                result = await client.call_tool("place_order", args, meta=meta)
                return envelope_reply("CallToolResult isError" if result.is_error else "CallToolResult",
                                      json.dumps(result.structured_content))

            await simple_loop(scenario, send, obs)
            book.wait_idle()
    finally:
        runner.close()
    return obs
