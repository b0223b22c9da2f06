"""`toolproof schema envelope`, `toolproof classify http`, `toolproof export`."""

from __future__ import annotations

import uuid

import typer

from ..catalog.toolset import EXPORT_FORMATS
from ..contract.classify import classify_http
from ..contract.envelope import Envelope, Meta, envelope_schema
from ._common import fail, load_toolset, print_json

schema_app = typer.Typer(help="Print the published JSON Schemas.", no_args_is_help=True)
classify_app = typer.Typer(help="Turn an upstream failure into the envelope a model would see.", no_args_is_help=True)


@schema_app.command("envelope")
def schema_envelope() -> None:
    """The JSON Schema (2020-12) of the result envelope, with every class's and action's description."""
    print_json(envelope_schema())


@classify_app.command("http")
def classify_http_cmd(
    status: int = typer.Argument(..., help="HTTP status code, e.g. 429."),
    header: list[str] = typer.Option([], "--header", "-H", help="A header as 'Name: value' (repeatable)."),
    body: str | None = typer.Option(None, "--body", "-b", help="The response body (JSON or text)."),
    tool: str = typer.Option("upstream", "--tool", help="The tool name to put in meta."),
) -> None:
    """Print the envelope for an HTTP error response."""
    if not 100 <= status <= 599:
        raise fail(f"status must be 100..599, got {status}")
    headers = []
    for item in header:
        name, sep, value = item.partition(":")
        if not sep:
            raise fail(f"header must be 'Name: value', got {item!r}")
        headers.append((name.strip(), value.strip()))
    error = classify_http(status, headers, body)
    envelope = Envelope.failure(error, Meta(tool=tool, call_id=uuid.uuid4().hex, attempts=1))
    print_json(envelope.to_dict())


def export_cmd(
    target: str = typer.Argument(..., help="MODULE:TOOLSET, e.g. toolproof.examples.wholesaler.tools:toolset"),
    fmt: str = typer.Option("mcp", "--format", "-f", help="mcp, openai or anthropic."),
) -> None:
    """Print a toolset's definitions in a provider's exact format."""
    if fmt not in EXPORT_FORMATS:
        raise fail(f"--format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")
    print_json(load_toolset(target).export(fmt))  # type: ignore[arg-type]


def register(app: typer.Typer) -> None:
    app.add_typer(schema_app, name="schema")
    app.add_typer(classify_app, name="classify")
    app.command("export")(export_cmd)
