"""`toolproof schema envelope`: the published JSON Schemas."""

from __future__ import annotations

import typer

from ..contract._envelope import envelope_schema
from ._options import JsonOpt, command_group, print_json

schema_app = command_group("Print the published JSON Schemas.")


@schema_app.command("envelope")
def schema_envelope(as_json: JsonOpt = False) -> None:
    """The JSON Schema (2020-12) of the result envelope, with every class's and action's description."""
    print_json(envelope_schema(), as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(schema_app, name="schema")
