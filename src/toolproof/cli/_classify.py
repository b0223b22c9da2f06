"""`toolproof classify http STATUS`: the envelope a model would see for an upstream failure."""

from __future__ import annotations

import uuid
from typing import Annotated

import typer

from ..contract._classify import classify_http
from ..contract._envelope import Envelope, Meta
from ._options import JsonOpt, command_group, fail, print_json

classify_app = command_group("Turn an upstream failure into the envelope a model would see.")


@classify_app.command("http")
def classify_http_cmd(
    status: Annotated[int, typer.Argument(help="HTTP status code, e.g. 429.")],
    header: Annotated[list[str] | None, typer.Option("--header", "-H",
                                                     help="A header as 'Name: value' (repeatable).")] = None,
    body: Annotated[str | None, typer.Option("--body", "-b", help="The response body (JSON or text).")] = None,
    tool: Annotated[str, typer.Option("--tool", help="The tool name to put in meta.")] = "upstream",
    as_json: JsonOpt = False,
) -> None:
    """Print the envelope for an HTTP error response (a Problem Details body's title and detail are kept)."""
    if not 100 <= status <= 599:
        raise fail(f"status must be 100..599, got {status}")
    headers = []
    for item in header or []:
        name, sep, value = item.partition(":")
        if not sep:
            raise fail(f"header must be 'Name: value', got {item!r}")
        headers.append((name.strip(), value.strip()))
    error = classify_http(status, headers, body)
    envelope = Envelope.failure(error, Meta(tool=tool, call_id=uuid.uuid4().hex, attempts=1))
    print_json(envelope.to_dict(), as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(classify_app, name="classify")
