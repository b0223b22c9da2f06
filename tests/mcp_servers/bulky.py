"""An MCP server whose answers are as big as asked: the gateway's response caps are tested against it.

Run: `python -m tests.mcp_servers.bulky`. `big` answers `size` bytes of text (ASCII, so bytes = characters);
`big_structured` answers structured content of about `size` bytes; `echo` answers its text. Every dispatch
appends `{"tool", "bytes_in"}` to the file named by `BULKY_LOG` (when set), so tests see what reached it.
"""

from __future__ import annotations

import json
import os
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server

from tests.mcp_servers import serve_stdio

SIZE = {"type": "object", "properties": {"size": {"type": "integer", "minimum": 0}}, "required": ["size"]}
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
READ = types.ToolAnnotations(read_only_hint=True)
TOOLS = [
    types.Tool(name="big", description="Answer SIZE bytes of text.", input_schema=SIZE, annotations=READ),
    types.Tool(name="big_structured", description="Answer about SIZE bytes of structured content.",
               input_schema=SIZE, annotations=READ,
               output_schema={"type": "object", "properties": {"rows": {"type": "array"}}, "required": ["rows"]}),
    types.Tool(name="echo", description="Echo text.", input_schema=TEXT, annotations=READ),
]
LINE = "0123456789abcdef" * 4 + "\n"  # 65 bytes


def build() -> Server[Any]:
    log = os.environ.get("BULKY_LOG")

    async def on_list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def on_call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        args = params.arguments or {}
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"tool": params.name, "bytes_in": len(json.dumps(args))}) + "\n")
        if params.name == "big":
            size = int(args["size"])
            text = (LINE * (size // len(LINE) + 1))[:size]
            return types.CallToolResult(content=[types.TextContent(text=text)])
        if params.name == "big_structured":
            rows = [LINE.strip()] * max(1, int(args["size"]) // (len(LINE) + 2))
            data = {"rows": rows}
            return types.CallToolResult(content=[types.TextContent(text=json.dumps(data))], structured_content=data)
        return types.CallToolResult(content=[types.TextContent(text=str(args.get("text")))])

    return Server("bulky", version="0.0.1", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


if __name__ == "__main__":
    serve_stdio(build())
