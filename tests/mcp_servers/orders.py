"""An MCP server without toolproof: `place_order` inserts a row in a SQLite file every time it is called (no
key, no journal), `count_orders` (read-only) says how many rows there are. The file is `ORDERS_DB`, so every
process started against it shares the orders. Run: `python -m tests.mcp_servers.orders`."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server

from tests.mcp_servers import serve_stdio

ORDER = {"type": "object", "properties": {"crop": {"type": "string", "enum": ["onion", "groundnut"]},
                                          "quantity_kg": {"type": "number", "minimum": 10}},
         "required": ["crop", "quantity_kg"]}
TOOLS = [
    types.Tool(name="place_order", description="Place one order.", input_schema=ORDER),
    types.Tool(name="count_orders", description="How many orders there are.",
               input_schema={"type": "object", "properties": {}},
               annotations=types.ToolAnnotations(read_only_hint=True)),
]


def build() -> Server[Any]:
    db = sqlite3.connect(os.environ["ORDERS_DB"], isolation_level=None, timeout=30)
    db.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, crop TEXT, quantity_kg REAL)")

    async def on_list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def on_call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        args = params.arguments or {}
        if params.name == "count_orders":
            count = db.execute("SELECT COUNT(*) FROM orders").fetchone()[0]
            return types.CallToolResult(content=[types.TextContent(text=json.dumps({"count": count}))],
                                        structured_content={"count": count})
        cur = db.execute("INSERT INTO orders (crop, quantity_kg) VALUES (?, ?)", (args["crop"], args["quantity_kg"]))
        await asyncio.sleep(0.05)  # long enough for two racing calls to overlap
        return types.CallToolResult(content=[types.TextContent(text=json.dumps({"order_id": cur.lastrowid}))])

    return Server("orders", version="0.0.1", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


if __name__ == "__main__":
    serve_stdio(build())
