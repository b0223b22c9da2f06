"""`toolproof serve` (a toolset over MCP) and `toolproof gateway` (one MCP server in front of others)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import typer

from ._common import fail, load_toolset, store_url


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("gateway")(gateway)


def serve(
    target: str = typer.Argument(..., metavar="MODULE:TOOLSET",
                                 help="The toolset, e.g. toolproof.examples.wholesaler:toolset."),
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP host to bind."),
    port: int = typer.Option(8000, "--port", help="HTTP port (0 picks a free one; the URL is printed on stderr)."),
    store: str | None = typer.Option(
        None, "--store", help="Journal and audit store URL (default: $TOOLPROOF_STORE, else .toolproof/*.sqlite3)."
    ),
    name: str = typer.Option("toolproof", "--name", help="The server name shown to clients."),
) -> None:
    """Serve a toolset over MCP (stdio by default), every call through the runner and its envelope."""
    from ..mcp import serve_http, serve_stdio
    from ..pipeline.runner import Runner

    toolset = load_toolset(target)
    try:
        runner = Runner(toolset, store=store_url(store))
    except ValueError as exc:
        raise fail(str(exc)) from None
    try:
        if http:
            asyncio.run(serve_http(runner, host=host, port=port, name=name))
        else:
            asyncio.run(serve_stdio(runner, name=name))
    except KeyboardInterrupt:  # pragma: no cover - interactive
        pass
    finally:
        runner.close()


def gateway(
    config: Path | None = typer.Option(None, "--config", "-c", help="Gateway TOML file (docs/mcp.md)."),
    upstream: list[str] = typer.Option([], "--upstream", "-u", help="NAME=COMMAND or NAME=URL (repeatable)."),
    trust: list[str] = typer.Option([], "--trust", help="Trust the annotations of this upstream (repeatable)."),
    prefix: str | None = typer.Option(None, "--prefix", help="Name prefixes: always | on_clash (default on_clash)."),
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP host to bind."),
    port: int = typer.Option(8000, "--port", help="HTTP port (0 picks a free one; the URL is printed on stderr)."),
    store: str | None = typer.Option(None, "--store", help="Journal and audit store URL (overrides the config)."),
) -> None:
    """Serve the tools of one or more upstream MCP servers through the whole contract."""
    from ..contract.errors import ToolError
    from ..mcp import ConfigError, Gateway, gateway_config

    try:
        cfg = gateway_config(config, upstream, trust=trust, prefix=prefix, store=store)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    if cfg.store is None:  # a long-running command keeps its journal and audit trail in a file by default
        cfg = dataclasses.replace(cfg, store=store_url(None))

    async def run() -> None:
        async with Gateway(cfg) as gw:
            if http:
                await gw.serve_http(host=host, port=port)
            else:
                await gw.serve_stdio()

    try:
        asyncio.run(run())
    except (ValueError, ToolError) as exc:  # DefinitionError and NameClash are ValueErrors
        raise fail(f"the gateway did not start: {exc}") from None
    except KeyboardInterrupt:  # pragma: no cover - interactive
        pass
