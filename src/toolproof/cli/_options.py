"""The CLI's conventions, in one place: the shared options, how output is printed, how stores are opened.

| convention    | meaning                                                                                 |
|---------------|-----------------------------------------------------------------------------------------|
| `--json`      | JSON lines on stdout: one object a line, nothing else on stdout                         |
| `--out FILE`  | write a file (`-o`); what was written is said once, on stderr                           |
| `--store/-s`  | a store URL; default `$TOOLPROOF_STORE`, else `sqlite:///.toolproof/toolproof.sqlite3`   |
| `--limit/-n`  | at most this many rows, newest first; default `DEFAULT_LIMIT`                            |
| `--note`      | what a person found and did (no short flag: `-m` is `--model`)                          |
| `--force`     | do what a command refuses by default; needs `--note`, recorded                          |
| times         | RFC 3339 UTC with milliseconds (`2026-11-30T18:40:00.000Z`) in text and JSON             |

User and tool text is never read as rich markup; off a terminal nothing wraps or is truncated.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..contract._envelope import utc_timestamp
from ..stores import ENV_VAR, FILE_STORE, Store, StoreNotFound, open_store, store_url
from ..stores._base import shown_url

DEFAULT_LIMIT: Final = 50
#: Off a terminal (CI logs, pipes) lines are as long as their content: nothing wraps, nothing is cut.
_UNWRAPPED: Final = 1_000_000
#: Fields that hold unix times in the records the CLI prints; shown as RFC 3339 in text and JSON alike.
TIME_FIELDS: Final = frozenset({"at", "resolved_at", "created_at", "updated_at", "lease_until", "first_seen",
                               "pinned_at", "expires_at", "decided_at"})


def _console(stderr: bool = False) -> Console:
    probe = Console(stderr=stderr)
    if probe.is_terminal or "COLUMNS" in os.environ:
        return Console(stderr=stderr, highlight=False)
    return Console(stderr=stderr, highlight=False, width=_UNWRAPPED)


console = _console()
err_console = _console(stderr=True)

StoreOpt = Annotated[str | None, typer.Option(
    "--store", "-s", show_default=False, help=f"Store URL (default: ${ENV_VAR}, else {FILE_STORE}).")]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many, newest first.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON lines on stdout (one object a line).")]
OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Write the result to this file.")]
#: An MCP server started over stdio, in one form wherever it is taken: its command line as one argument.
MCP_COMMAND_HELP: Final = "An MCP server to start over stdio: its command line, quoted as one argument."
MCP_URL_HELP: Final = "An MCP server over streamable HTTP: its URL."
NoteOpt = Annotated[str | None, typer.Option("--note", help="What a person found and did; kept with the record.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Act even where the command refuses; needs --note.")]


def command_group(help: str | None, *, no_args_is_help: bool = True, **settings: Any) -> typer.Typer:
    """A group of subcommands, its help in plain text: a flag shows as `--json`, never `--json <bool>`, and a
    bracket in a docstring is not markup (rich help panels show every option's type, a flag's too)."""
    return typer.Typer(help=help, no_args_is_help=no_args_is_help, rich_markup_mode=None, **settings)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `error: MESSAGE` on stderr (the message verbatim, never markup) and return the exit to raise."""
    err_console.print(Text.assemble(("error:", "bold red"), " ", message))
    return typer.Exit(code)


def say(message: str, *, stderr: bool = False) -> None:
    """One line of plain text (never markup)."""
    (err_console if stderr else console).print(Text(message))


def timestamp(at: float | None) -> str | None:
    """RFC 3339 UTC with milliseconds, the one time format of the CLI."""
    return None if at is None else utc_timestamp(at)


def jsonable(row: Mapping[str, Any]) -> dict[str, Any]:
    """A record as the CLI prints it: its unix times as RFC 3339 strings."""
    return {k: timestamp(v) if k in TIME_FIELDS and isinstance(v, int | float) else v for k, v in row.items()}


def json_line(row: Any) -> str:
    return json.dumps(jsonable(row) if isinstance(row, Mapping) else row, ensure_ascii=False, default=str)


def json_lines(rows: Iterable[Any]) -> str:
    """The text `--json` prints: one compact JSON value a line."""
    return "".join(json_line(row) + "\n" for row in rows)


def plain_text(render: Callable[[Console], None]) -> str:
    """What `render` prints to a console, as the plain text `--out` writes (no colour, nothing wrapped)."""
    buffer = io.StringIO()
    render(Console(file=buffer, width=_UNWRAPPED, highlight=False, color_system=None))
    return buffer.getvalue()


def print_json_lines(rows: Iterable[Any]) -> None:
    """`--json`: one compact JSON value a line on stdout."""
    for row in rows:
        typer.echo(json_line(row))


def json_text(data: Any, as_json: bool) -> str:
    """A result that is JSON by nature: indented for a person, or with `--json` as JSON lines (a list one
    item a line)."""
    if as_json:
        return json_lines(data if isinstance(data, list) else [data])
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def print_json(data: Any, as_json: bool) -> None:
    """`json_text` on stdout."""
    typer.echo(json_text(data, as_json), nl=False)


def print_record(row: Mapping[str, Any]) -> None:
    """One record as `field: value` lines; nested values as compact JSON."""
    for key, value in jsonable(row).items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        say(f"{key}: {shown}")


def print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None,
                stderr: bool = False) -> None:
    """A table whose cells are plain text (brackets in a tool's text stay brackets); on stderr when stdout
    carries something else (a stdio server's protocol)."""
    table = Table(*columns, title=Text(title) if title else None)
    for row in rows:
        table.add_row(*(Text("" if cell is None else str(cell)) for cell in row))
    (err_console if stderr else console).print(table)


def plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def chosen_store(store: str | None) -> str:
    """The store URL a command uses: --store, else $TOOLPROOF_STORE, else the file in .toolproof/."""
    return store_url(store, default=FILE_STORE)


def shown_store(store: str | None) -> str:
    """The chosen store's URL as printed (a password masked)."""
    return shown_url(chosen_store(store))


def open_existing(store: str | None) -> Store:
    """The chosen store, which must exist: commands that inspect or reconcile never create one (exit 2)."""
    url = chosen_store(store)
    try:
        return open_store(url, create=False)
    except StoreNotFound as exc:  # the hint only when no store was named: a named one is simply not there
        named = store is not None or bool(os.environ.get(ENV_VAR))
        raise fail(str(exc) if named else f"{exc} (give --store or set ${ENV_VAR})") from None
    except (ValueError, ImportError) as exc:
        raise fail(str(exc)) from None
    except Exception as exc:  # e.g. a PostgreSQL server that does not answer
        raise store_failure(url, exc) from None


def store_failure(url: str, exc: Exception) -> typer.Exit:
    """A store that cannot be opened (a PostgreSQL server that does not answer, a locked file): one clear
    line naming the store (password masked) and the cause, exit 2; never a traceback."""
    return fail(f"cannot open store {shown_url(url)}: {type(exc).__name__}: {exc}")


def missing_file(target: str) -> str | None:
    """"no such file: X" for a command-line target that names a path which is not there (no `:`, or starting
    with `/` or `.`), so a mistyped path is not reported as an unrecognised MODULE:ATTR; None otherwise."""
    if Path(target).exists() or (":" in target and not target.startswith(("/", "."))):
        return None
    return f"no such file: {target}"


def write_text(path: Path, text: str, what: str, *, newline: str | None = None) -> None:
    """`--out FILE`: write it and say so once, on stderr (stdout stays for data)."""
    try:
        path.write_text(text, encoding="utf-8", newline=newline)
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc}") from None
    say(f"wrote {what} to {path}", stderr=True)
