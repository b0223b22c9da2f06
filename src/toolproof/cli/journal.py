"""`toolproof journal list | show KEY | resolve KEY --done|--not-done | prune --older-than 24h`."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.table import Table

from ..contract.errors import ToolError
from ..contract.redaction import redact
from ..journal.journal import Journal, parse_duration
from ..stores import ENV_VAR, open_store
from ..stores.intent import INTENT_STATUSES, Intent
from ._common import DEFAULT_STORE, console, fail, print_json, store_url

journal_app = typer.Typer(help="Inspect and reconcile the write journal (exactly-once writes).", no_args_is_help=True)

StoreOption = typer.Option(None, "--store", "-s", help=f"Store URL (default: ${ENV_VAR}, else {DEFAULT_STORE}).")


def _journal(store: str | None) -> Journal:
    url = store_url(store)
    try:
        return Journal(open_store(url))
    except (ValueError, ImportError, OSError) as exc:
        raise fail(f"cannot open store {url!r}: {exc}") from None
    except Exception as exc:  # e.g. a PostgreSQL connection error
        raise fail(f"cannot open store {url!r}: {type(exc).__name__}: {exc}") from None


def _row(intent: Intent) -> dict[str, Any]:
    row: dict[str, Any] = redact(intent.to_dict())  # stored redacted; again here for rows older versions wrote
    return row


@journal_app.command("list")
def list_cmd(
    status: str | None = typer.Option(None, "--status", help=f"Only this status: {', '.join(INTENT_STATUSES)}."),
    limit: int = typer.Option(100, "--limit", min=1, help="At most this many, newest first."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    store: str | None = StoreOption,
) -> None:
    """List journal entries (expired leases are turned into `unknown` first)."""
    if status is not None and status not in INTENT_STATUSES:
        raise fail(f"--status must be one of {', '.join(INTENT_STATUSES)}, got {status!r}")
    journal = _journal(store)
    try:
        rows = journal.list(status, limit)
    finally:
        journal.store.close()
    if as_json:
        print_json([_row(r) for r in rows])
        return
    table = Table("key", "status", "tool", "conversation", "created", "resolution")
    for r in rows:
        table.add_row(r.key, r.status, r.tool, r.conversation_id or "", _when(r.created_at), r.resolution or "")
    console.print(table)
    console.print(f"{len(rows)} entr{'y' if len(rows) == 1 else 'ies'}")


@journal_app.command("show")
def show_cmd(key: str = typer.Argument(..., help="The idempotency key."), store: str | None = StoreOption) -> None:
    """Print one journal entry as JSON."""
    journal = _journal(store)
    try:
        row = journal.show(key)
    finally:
        journal.store.close()
    if row is None:
        raise fail(f"no journal entry has the key {key!r}", code=1)
    print_json(_row(row))


@journal_app.command("resolve")
def resolve_cmd(
    key: str = typer.Argument(..., help="The idempotency key."),
    done: bool | None = typer.Option(None, "--done/--not-done", help="Whether the effect happened."),
    result: str | None = typer.Option(None, "--result", help="With --done: the result (JSON) to replay."),
    note: str | None = typer.Option(None, "--note", help="Why: kept as the resolution."),
    store: str | None = StoreOption,
) -> None:
    """Reconcile an entry after checking the effect's own system; resolves its stop records too."""
    if done is None:
        raise fail("say --done or --not-done")
    value: Any = None
    if result is not None:
        if not done:
            raise fail("--result goes with --done")
        try:
            value = json.loads(result)
        except ValueError as exc:
            raise fail(f"--result is not JSON: {exc}") from None
    journal = _journal(store)
    try:
        settled = journal.reconcile(key, "done" if done else "not_done", result=value, note=note)
    except ToolError as exc:
        raise fail(exc.message, code=1) from None
    finally:
        journal.store.close()
    print_json(_row(settled))


@journal_app.command("prune")
def prune_cmd(
    older_than: str = typer.Option("24h", "--older-than", help="Forget finished entries older than this (24h, 7d)."),
    store: str | None = StoreOption,
) -> None:
    """Delete finished entries older than the given age; unknown and in-flight entries are never pruned."""
    try:
        seconds = parse_duration(older_than)
    except ValueError as exc:
        raise fail(str(exc)) from None
    journal = _journal(store)
    try:
        count = journal.prune(seconds)
    finally:
        journal.store.close()
    typer.echo(f"pruned {count} entr{'y' if count == 1 else 'ies'}")


def _when(at: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(at, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def register(app: typer.Typer) -> None:
    app.add_typer(journal_app, name="journal")
