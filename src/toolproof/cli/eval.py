"""`toolproof eval ...`: the evals (selection, schema, recovery, bfcl, compare, retrieval).

Other modules add subcommands to `eval_app` in their own `register(app)`.
"""

from __future__ import annotations

import typer

eval_app = typer.Typer(help="Measure tool choice, arguments, error recovery and retrieval.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(eval_app, name="eval")
