"""`toolproof serve`: a toolset over MCP, every call through the runner and its envelope."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from ..stores.base import shown_url
from ._load import load_toolset
from ._options import StoreOpt, chosen_store, fail, say

HttpOpt = Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")]
HostOpt = Annotated[str, typer.Option("--host", help="HTTP host to bind.")]
PortOpt = Annotated[int, typer.Option("--port", help="HTTP port (0 picks a free one; the URL is printed on stderr).")]


def serve(
    target: Annotated[str, typer.Argument(metavar="MODULE:TOOLSET",
                                          help="The toolset, e.g. toolproof.examples.wholesaler:toolset.")],
    http: HttpOpt = False,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8000,
    store: StoreOpt = None,
    name: Annotated[str, typer.Option("--name", help="The server name shown to clients.")] = "toolproof",
) -> None:
    """Serve a toolset over MCP (stdio by default); the store is named once, on stderr."""
    from ..mcp import serve_http, serve_stdio
    from ..pipeline.runner import Runner

    toolset = load_toolset(target)
    url = chosen_store(store)
    try:
        runner = Runner(toolset, store=url)
    except ValueError as exc:
        raise fail(str(exc)) from None
    say(f"journal and audit trail: {shown_url(url)}", stderr=True)
    try:
        if http:
            asyncio.run(serve_http(runner, host=host, port=port, name=name))
        else:
            asyncio.run(serve_stdio(runner, name=name))
    except KeyboardInterrupt:  # pragma: no cover - interactive
        pass
    finally:
        runner.close()


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
