"""The `toolproof` command. Thin: parse, call the library, render.

Each module in this package that defines `register(app)` adds its commands, whatever the module's name (the
command modules are internal, `_journal.py` for `toolproof journal`); nothing else to edit.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Sequence

import typer

from .._extras import missing_extra
from .._surface import publish_all
from .._version import __version__
from ._options import fail

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolproof",
    help="Make the tools an AI agent calls hard to misuse, and prove it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
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
    """Found by their `register` function, not their file name (the helpers, `_options` and the like, have none)."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(app)


_register_commands()


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point. A command that reaches a part whose extra is not installed ends in one line naming
    the `pip install 'toolproof[EXTRA]'` to run, exit 2, not in a traceback (a plain `pip install toolproof`
    has the core only); a usage error (an unknown option, a missing argument) is one `error:` line, exit 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = app(args=args, prog_name="toolproof", standalone_mode=False)
    except ImportError as exc:
        words = [w for w in args if not w.startswith("-")][:1]
        found = missing_extra(exc, " ".join(["toolproof", *words]))
        if found is None:
            raise
        raise SystemExit(fail(str(found)).exit_code) from None
    except typer.Abort:
        raise SystemExit(fail("aborted", 1).exit_code) from None
    except Exception as exc:
        code = _usage_error(exc)
        if code is None:
            raise
        raise SystemExit(code) from None
    raise SystemExit(result if isinstance(result, int) else 0)


def _usage_error(exc: Exception) -> int | None:
    """click's own errors, told by their shape (typer may vendor click): a command group called bare prints
    its help; any other is `error: MESSAGE (see `COMMAND --help`)` on one line. None for anything else."""
    message, code = getattr(exc, "format_message", None), getattr(exc, "exit_code", None)
    if not callable(message) or not isinstance(code, int):
        return None
    text = " ".join(str(message()).split())
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoArgsIsHelpError":
        typer.echo(message(), err=True, nl=False)
        return code
    if ctx is not None:
        text += f" (see `{ctx.command_path} --help`)"
    return fail(text, code).exit_code


if __name__ == "__main__":  # pragma: no cover
    main()

publish_all(globals())
