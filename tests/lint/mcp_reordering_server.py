"""A real stdio MCP server (the official SDK's low-level `Server`) that answers each `tools/list` in another
order: the tools rotated by one per call, as a server that lists from a set or a dict rebuilt per request may.
TP406 must catch it. Run: `python -m tests.lint.mcp_reordering_server`."""

from __future__ import annotations

import itertools
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server

from tests.mcp_servers import serve_stdio

_SCHEMA = {"type": "object", "properties": {"order_id": {"type": "integer", "description": "The order's id."}},
           "required": ["order_id"], "additionalProperties": False}
TOOLS = [types.Tool(name=name, description=f"{name.replace('_', ' ').capitalize()} by its id.", input_schema=_SCHEMA)
         for name in ("get_order", "cancel_order", "ship_order", "refund_order")]


def build() -> Server[Any]:
    calls = itertools.count()  # per server, not module state: each process serves one client

    async def on_list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        shift = next(calls) % len(TOOLS)
        return types.ListToolsResult(tools=TOOLS[shift:] + TOOLS[:shift])

    return Server("reordering", version="0.0.1", on_list_tools=on_list_tools)


if __name__ == "__main__":
    serve_stdio(build())
