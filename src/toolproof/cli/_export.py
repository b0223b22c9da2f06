"""`toolproof export MODULE:TOOLSET`: a toolset's definitions in a provider's exact format."""

from __future__ import annotations

from typing import Annotated

import typer

from ..catalog._toolset import EXPORT_FORMATS
from ._load import load_toolset
from ._options import JsonOpt, OutOpt, fail, json_text, plural, write_text


def export_cmd(
    target: Annotated[str, typer.Argument(help="MODULE:TOOLSET, e.g. toolproof.examples.wholesaler.tools:toolset")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="mcp, openai or anthropic.")] = "mcp",
    as_json: JsonOpt = False,
    out: OutOpt = None,
) -> None:
    """Print (or with --out write) a toolset's definitions in a provider's exact format."""
    if fmt not in EXPORT_FORMATS:
        raise fail(f"--format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")
    tools = load_toolset(target).export(fmt)  # type: ignore[arg-type]
    text = json_text(tools, as_json)
    if out is None:
        typer.echo(text, nl=False)
        return
    write_text(out, text, f"{plural(len(tools), 'tool', 'tools')} ({fmt})")


def register(app: typer.Typer) -> None:
    app.command("export")(export_cmd)
