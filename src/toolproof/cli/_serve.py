"""`toolproof serve`: a toolset over MCP, every call through the runner and its envelope."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..stores._base import shown_url
from ._load import load_toolset
from ._options import StoreOpt, chosen_store, fail, say, store_failure

if TYPE_CHECKING:
    from ..mcp._auth import HttpAuth

HttpOpt = Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")]
HostOpt = Annotated[str, typer.Option("--host", help="HTTP host to bind.")]
PortOpt = Annotated[int, typer.Option("--port", help="HTTP port (0 picks a free one; the URL is printed on stderr).")]
TokensFileOpt = Annotated[Path | None, typer.Option(
    "--tokens-file", help="HTTP bearer tokens: a file of `PRINCIPAL TOKEN` lines.")]
TokensEnvOpt = Annotated[str | None, typer.Option(
    "--tokens-env", help="HTTP bearer tokens: the NAME of an environment variable holding `PRINCIPAL TOKEN` "
                         "entries (newline or comma separated).")]
OAuthOpt = Annotated[Path | None, typer.Option(
    "--oauth", help="HTTP as an OAuth resource server: a TOML file naming the issuer, this server's resource URL "
                    "and the token introspection endpoint (docs/mcp.md).")]
AllowHostOpt = Annotated[list[str] | None, typer.Option(
    "--allow-host", help="A Host/Origin name clients use besides loopback and the bound address (repeatable).")]


def http_auth(tokens_file: Path | None, tokens_env: str | None, oauth: Path | None = None) -> HttpAuth | None:
    """The HTTP authentication the options ask for (None: no authentication, loopback only)."""
    from ..mcp._auth import HttpAuth, TokenTable

    if sum(x is not None for x in (tokens_file, tokens_env, oauth)) > 1:
        raise fail("give one of --tokens-file, --tokens-env and --oauth, not several")
    try:
        if oauth is not None:
            return HttpAuth.from_oauth_file(oauth)
        if tokens_file is not None:
            return HttpAuth.bearer(TokenTable.from_file(tokens_file))
        if tokens_env is not None:
            return HttpAuth.bearer(TokenTable.from_env(tokens_env))
    except ValueError as exc:
        raise fail(str(exc)) from None
    return None


def check_http_bind(http: bool, host: str, auth: HttpAuth | None) -> None:
    """Exit 2 before anything starts when HTTP would listen beyond loopback without authentication."""
    from ..mcp._auth import InsecureBind, check_bind

    if not http and auth is not None:
        raise fail("--tokens-file/--tokens-env/--oauth apply to --http only")
    try:
        if http:
            check_bind(host, auth)
    except InsecureBind as exc:
        raise fail(str(exc)) from None


def serve(
    target: Annotated[str, typer.Argument(metavar="MODULE:TOOLSET",
                                          help="The toolset, e.g. toolproof.examples.wholesaler:toolset.")],
    http: HttpOpt = False,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8000,
    store: StoreOpt = None,
    name: Annotated[str, typer.Option("--name", help="The server name shown to clients.")] = "toolproof",
    tokens_file: TokensFileOpt = None,
    tokens_env: TokensEnvOpt = None,
    oauth: OAuthOpt = None,
    allow_host: AllowHostOpt = None,
) -> None:
    """Serve a toolset over MCP (stdio by default); the store is named once, on stderr."""
    from ..mcp import serve_http, serve_stdio
    from ..pipeline._runner import Runner

    auth = http_auth(tokens_file, tokens_env, oauth)
    check_http_bind(http, host, auth)
    toolset = load_toolset(target)
    url = chosen_store(store)
    try:
        runner = Runner(toolset, store=url)
    except ValueError as exc:
        raise fail(str(exc)) from None
    except Exception as exc:  # e.g. a PostgreSQL server that refuses connections
        raise store_failure(url, exc) from None
    say(f"journal and audit trail: {shown_url(url)}", stderr=True)
    try:
        if http:
            asyncio.run(serve_http(runner, host=host, port=port, name=name, auth=auth,
                                   allowed_hosts=allow_host or ()))
        else:
            asyncio.run(serve_stdio(runner, name=name))
    except KeyboardInterrupt:  # pragma: no cover - interactive
        pass
    finally:
        runner.close()


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
