"""Small MCP servers the tests start as subprocesses; `serve_stdio` runs one over stdin/stdout."""

from __future__ import annotations

import asyncio
from typing import Any


def serve_stdio(server: Any) -> None:
    """Run a low-level SDK `Server` over stdio until its client closes the stream."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    asyncio.run(main())
