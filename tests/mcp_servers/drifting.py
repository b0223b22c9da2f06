"""An MCP server whose tools are read from a JSON file on every `tools/list`, so a test can change a definition
between two starts or while it runs (a description that gains an injected instruction, a new field).

Run: `python -m tests.mcp_servers.drifting TOOLS.json [LOG] [--lists FILE] [--notify]`. Every dispatch appends
one JSON line `{"tool", "arguments"}` to LOG, so tests see what reached the upstream; every `tools/list` appends
one line to `--lists`, so tests count the listings. A call naming a tool the file does not list, or missing an
argument its `inputSchema` requires, is refused as invalid params (-32602), as the spec says. With `--notify`
the server serves `subscriptions/listen` and announces a tool list change whenever the file changes. A call
with the argument `"number": "EXIT"` ends the process mid-call (an upstream that dies and is restarted).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError


def read_tools(tools_file: Path) -> list[types.Tool]:
    return [types.Tool.model_validate(t) for t in json.loads(tools_file.read_text(encoding="utf-8"))]


def append(file: Path | None, row: dict[str, Any]) -> None:
    if file is not None:
        with file.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


def build(tools_file: Path, log: Path | None, lists: Path | None = None,
          bus: InMemorySubscriptionBus | None = None) -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        append(lists, {"list": True})
        return types.ListToolsResult(tools=read_tools(tools_file))

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        tools = {t.name: t for t in read_tools(tools_file)}
        tool = tools.get(params.name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        missing = sorted(set(tool.input_schema.get("required", [])) - set(params.arguments or {}))
        if missing:
            raise MCPError(code=types.INVALID_PARAMS, message=f"missing required argument(s): {', '.join(missing)}")
        if (params.arguments or {}).get("number") == "EXIT":
            os._exit(3)
        append(log, {"tool": params.name, "arguments": params.arguments})
        text = json.dumps({"tool": params.name, "arguments": params.arguments or {}})
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server("drifting", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_subscriptions_listen=ListenHandler(bus) if bus is not None else None)


async def announce_changes(tools_file: Path, bus: InMemorySubscriptionBus) -> None:
    """Publish a tool list change whenever the file's content changes (polled: a test writes it)."""
    seen = tools_file.read_bytes()
    while True:
        await anyio.sleep(0.05)
        try:
            now = tools_file.read_bytes()
        except OSError:
            continue
        if now != seen:
            seen = now
            await bus.publish(ToolsListChanged())


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tools", type=Path)
    parser.add_argument("log", type=Path, nargs="?")
    parser.add_argument("--lists", type=Path)
    parser.add_argument("--notify", action="store_true")
    args = parser.parse_args()
    bus = InMemorySubscriptionBus() if args.notify else None
    server = build(args.tools, args.log, args.lists, bus)
    options = server.create_initialization_options(NotificationOptions(tools_changed=args.notify))
    async with stdio_server() as (read, write), anyio.create_task_group() as group:
        if bus is not None:
            group.start_soon(announce_changes, args.tools, bus)
        await server.run(read, write, options)
        group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
