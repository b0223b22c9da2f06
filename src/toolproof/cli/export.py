"""`toolproof export MODULE:TOOLSET`: a toolset's definitions in a provider's exact format."""

from __future__ import annotations

from typing import Annotated

import typer

from ..catalog.toolset import EXPORT_FORMATS
from ._load import load_toolset
from ._options import JsonOpt, fail, print_json


def export_cmd(
    target: Annotated[str, typer.Argument(help="MODULE:TOOLSET, e.g. toolproof.examples.wholesaler.tools:toolset")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="mcp, openai or anthropic.")] = "mcp",
    as_json: JsonOpt = False,
) -> None:
    """Print a toolset's definitions in a provider's exact format."""
    if fmt not in EXPORT_FORMATS:
        raise fail(f"--format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")
    print_json(load_toolset(target).export(fmt), as_json)  # type: ignore[arg-type]


def register(app: typer.Typer) -> None:
    app.command("export")(export_cmd)
