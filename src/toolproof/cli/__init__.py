"""The `toolproof` command. Thin: parse, call the library, render.

Each module in this package that defines `register(app)` adds its commands; nothing else to edit.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer

from .._extras import missing_extra
from .._version import __version__
from ._options import fail

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolproof",
    help="Make the tools an AI agent calls hard to misuse, and prove it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"toolproof {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """toolproof: strict tool definitions, one error envelope, safe retries, exactly-once writes."""


def _register_commands() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(app)


_register_commands()


def main() -> None:
    """Console entry point. A command that reaches a part whose extra is not installed ends in one line naming
    the `pip install 'toolproof[EXTRA]'` to run, exit 2, not in a traceback (a plain `pip install toolproof`
    has the core only)."""
    try:
        app(prog_name="toolproof")
    except ImportError as exc:
        words = [w for w in sys.argv[1:] if not w.startswith("-")][:1]
        found = missing_extra(exc, " ".join(["toolproof", *words]))
        if found is None:
            raise
        raise SystemExit(fail(str(found)).exit_code) from None


if __name__ == "__main__":  # pragma: no cover
    main()
