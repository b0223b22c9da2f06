"""A small real MCP server over streamable HTTP (the official SDK), started by the lint tests."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("lint-test")


@server.tool()
def search(query: str) -> str:
    """Search."""
    return query


@server.tool()
def get_order_status(order_id: int) -> str:
    """Get one order's status by its id. Use this when the buyer asks about an order they placed; do not use it to
    place orders. Returns the status."""
    return "placed"


if __name__ == "__main__":
    server.run("streamable-http", port=int(sys.argv[1]))
