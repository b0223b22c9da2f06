"""An MCP server that announces toolproof's identity extension and does not honour it: `place_order` keeps one
order per crop and quantity (a UNIQUE constraint on the arguments), whatever the conversation or the principal
in `_meta`, so a resend runs once but another conversation's order is never placed. `count_orders` counts
the rows in `ORDERS_DB`. Run: `python -m tests.mcp_servers.careless_orders`."""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server

from tests.mcp_servers import serve_stdio
from tests.mcp_servers.orders import TOOLS
from toolproof.mcp._server import META_CONVERSATION_ID, META_PRINCIPAL, OPERATIONS_EXTENSION


def build() -> Server[Any]:
    db = sqlite3.connect(os.environ["ORDERS_DB"], isolation_level=None, timeout=30)
    db.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, crop TEXT, quantity_kg REAL,"
               " UNIQUE (crop, quantity_kg))")

    async def on_list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def on_call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        args = params.arguments or {}
        if params.name == "count_orders":
            count = db.execute("SELECT COUNT(*) FROM orders").fetchone()[0]
            return types.CallToolResult(content=[types.TextContent(text=json.dumps({"count": count}))],
                                        structured_content={"count": count})
        db.execute("INSERT INTO orders (crop, quantity_kg) VALUES (?, ?) ON CONFLICT DO NOTHING",
                   (args["crop"], args["quantity_kg"]))
        return types.CallToolResult(content=[types.TextContent(text=json.dumps({"placed": True}))])

    server = Server("careless-orders", version="0.0.1", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    server.extensions[OPERATIONS_EXTENSION] = {"version": "1", "journaledTools": ["place_order"],
                                               "meta": {"conversation": META_CONVERSATION_ID,
                                                        "principal": META_PRINCIPAL}}
    return server


if __name__ == "__main__":
    serve_stdio(build())
