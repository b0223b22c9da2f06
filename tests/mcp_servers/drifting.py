"""An MCP server whose tools are read from a JSON file at start, so a test can change a definition between
two starts (a description that gains an injected instruction, a new optional field).

Run: `python -m tests.mcp_servers.drifting TOOLS.json [LOG]`. Every dispatch appends one JSON line
`{"tool", "arguments"}` to LOG, so tests see what reached the upstream.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server


def build(tools_file: Path, log: Path | None) -> Server[Any]:
    tools = [types.Tool.model_validate(t) for t in json.loads(tools_file.read_text(encoding="utf-8"))]

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        if log is not None:
            with log.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"tool": params.name, "arguments": params.arguments}) + "\n")
        text = json.dumps({"tool": params.name, "arguments": params.arguments or {}})
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server("drifting", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    server = build(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
