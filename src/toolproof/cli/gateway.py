"""`toolproof gateway`: one MCP server in front of others, every upstream call through the whole contract."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from ..stores.base import shown_url
from ._options import StoreOpt, chosen_store, fail, say
from .serve import HostOpt, HttpOpt, PortOpt


def gateway(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Gateway TOML file (docs/mcp.md).")] = None,
    upstream: Annotated[list[str] | None, typer.Option("--upstream", "-u",
                                                       help="NAME=COMMAND or NAME=URL (repeatable).")] = None,
    trust: Annotated[list[str] | None, typer.Option("--trust", help="Trust the annotations of this upstream "
                                                                    "(repeatable).")] = None,
    prefix: Annotated[str | None, typer.Option("--prefix", help="Name prefixes: always | on_clash "
                                                                "(default on_clash).")] = None,
    http: HttpOpt = False,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8000,
    store: StoreOpt = None,
) -> None:
    """Serve the tools of one or more upstream MCP servers through the whole contract."""
    if ctx.invoked_subcommand is not None:  # `gateway pins ...`
        return
    from ..contract.errors import ToolError
    from ..mcp import ConfigError, Gateway, gateway_config

    try:
        cfg = gateway_config(config, upstream or [], trust=trust or [], prefix=prefix, store=store)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    # --store, else the config file's store, else $TOOLPROOF_STORE, else the file in .toolproof/
    cfg = dataclasses.replace(cfg, store=chosen_store(cfg.store))
    say(f"journal and audit trail: {shown_url(cfg.store or '')}", stderr=True)

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


def register(app: typer.Typer) -> None:
    from ._pins import pins_app

    group = typer.Typer(invoke_without_command=True, help=gateway.__doc__)
    group.callback()(gateway)
    group.add_typer(pins_app, name="pins")
    app.add_typer(group, name="gateway")
