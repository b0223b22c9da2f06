"""A bare pass-through MCP proxy on the SDK alone (no validation, no runner, no envelope): the floor a
gateway hop costs with this SDK, used by `bench_gateway.py` to show toolproof's own share of the hop.

Run: `python benchmarks/_mcp_passthrough.py UPSTREAM_COMMAND...` (serves stdio, forwards to the upstream).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server


async def main(command: list[str]) -> None:
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "src"))
    from toolproof.mcp._stdio import stdio_streams

    upstream = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(upstream, cache=None) as client:
        listed = await client.list_tools()

        async def on_list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
            return listed

        async def on_call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            request = types.CallToolRequest(params=types.CallToolRequestParams(name=params.name,
                                                                                arguments=params.arguments))
            return await client.session.send_request(request, types.CallToolResult)

        server: Server[Any] = Server("passthrough", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
        server.middleware.clear()
        async with stdio_streams() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
