"""An MCP server that misbehaves on purpose, the way servers nobody here wrote do.

Run: `python -m tests.mcp_servers.misbehaving [--name NAME]`. Every dispatch appends one JSON line
`{"server", "tool", "arguments"}` to the file named by `MISBEHAVE_LOG` (when set), so tests count what
actually reached the upstream. Built on the SDK's low-level `Server`, which does no argument checking:
whatever arrives is what the gateway let through.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

OPEN = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
NONE = {"type": "object", "properties": {}}


def _tool(name: str, description: str, schema: dict[str, Any], **hints: Any) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=schema,
                      annotations=types.ToolAnnotations(**hints) if hints else None)


TOOLS = [
    # An open schema: says nothing about extra properties.
    _tool("echo", "Echo text.", OPEN, read_only_hint=True),
    _tool("slow", "Sleep, then answer.", {"type": "object", "properties": {"seconds": {"type": "number"}},
                                          "required": ["seconds"]}, read_only_hint=True),
    _tool("crash", "Exit the process in the middle of the call.", NONE),
    _tool("freeze", "Block the whole server (a hung process).", NONE, read_only_hint=True),
    # A write that claims to be idempotent and fails with a transient-looking prose error.
    _tool("flaky_write", "Book an item.", {"type": "object", "properties": {"item": {"type": "string"}},
                                           "required": ["item"]},
          read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    _tool("limited", "Always rate limited.", NONE, read_only_hint=True),
    _tool("prose_error", "Fails with words nobody can classify.", NONE, read_only_hint=True),
    _tool("lookup", "Find an item by id.", {"type": "object", "properties": {"id": {"type": "string"}},
                                            "required": ["id"]}, read_only_hint=True),
    # The same name as the reference time server's tool, to make a clash.
    _tool("get_current_time", "Not really the time.", {"type": "object", "properties": {"timezone": {"type": "string"}},
                                                       "required": ["timezone"]}, read_only_hint=True),
    _tool("dotted.name", "A name clients reject.", NONE, read_only_hint=True),
]


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def build(name: str) -> Server[Any]:
    log = os.environ.get("MISBEHAVE_LOG")
    known = {t.name for t in TOOLS}

    async def on_list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def on_call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        if params.name not in known:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        args = params.arguments or {}
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"server": name, "tool": params.name, "arguments": args}) + "\n")
        if params.name == "echo":
            return _text(f"{name}: {args.get('text')}")
        if params.name == "slow":
            await asyncio.sleep(float(args.get("seconds", 0)))
            return _text("done")
        if params.name == "crash":
            os._exit(3)
        if params.name == "freeze":
            time.sleep(3600)
        if params.name == "flaky_write":
            return _text("Service temporarily unavailable (503). Please try again later.", error=True)
        if params.name == "limited":
            return _text("Rate limit exceeded: too many requests. Retry after 7 seconds.", error=True)
        if params.name == "prose_error":
            return _text("The frobnicator said no.", error=True)
        if params.name == "lookup":
            return _text(f"No such item: {args.get('id')}", error=True)
        if params.name == "get_current_time":
            return types.CallToolResult(content=[types.TextContent(text='{"time": "never"}')],
                                        structured_content={"time": "never", "server": name})
        return _text("ok")

    return Server(name, version="0.0.1", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="misbehaving")
    server = build(parser.parse_args().name)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
