"""`toolproof lock`: write the reviewed snapshot of a toolset's definitions (`toolproof.lock.json`)."""

from __future__ import annotations

import typer

from ..contract._errors import DefinitionError
from ..versions import dumps_lock
from ._lockload import STDIO_PREFIX, load_lock
from ._options import MCP_COMMAND_HELP, MCP_URL_HELP, OutOpt, fail, plural, write_text


def lock_cmd(
    target: str = typer.Argument(None, help="MODULE:TOOLSET, a JSON/JSONL file of definitions, or a lock file."),
    mcp_command: str = typer.Option(None, "--mcp-command", metavar="COMMAND", help=MCP_COMMAND_HELP),
    mcp_url: str = typer.Option(None, "--mcp-url", metavar="URL", help=MCP_URL_HELP),
    out: OutOpt = None,
) -> None:
    """Print (or with --out write) the lock: every tool's definition, fingerprint and the error contract, in
    a stable form to commit and diff."""
    given = [t for t in (target, mcp_command and STDIO_PREFIX + mcp_command, mcp_url) if t]
    if len(given) != 1:
        raise fail("give exactly one of TARGET, --mcp-command or --mcp-url")
    try:
        lock = load_lock(given[0])
    except DefinitionError as exc:
        raise fail(str(exc)) from None
    text = dumps_lock(lock)
    if out is None:
        typer.echo(text, nl=False)
        return
    write_text(out, text, f"the lock of {plural(len(lock.tools), 'tool', 'tools')}")


def register(app: typer.Typer) -> None:
    app.command("lock")(lock_cmd)

