"""`toolproof stops list|show|resolve`: the give-ups a person must act on, from a store."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import typer
from rich.table import Table

from ..contract.redaction import redact, redact_text
from ..stores import Store, open_store
from ..stores.records import StopRecord
from ._common import DEFAULT_STORE, console, fail, print_json

stops_app = typer.Typer(help="Stop records: calls the orchestrator gave up on.", no_args_is_help=True)

STORE_OPTION = typer.Option(DEFAULT_STORE, "--store", envvar="TOOLPROOF_STORE", help="Store URL.")


def connect(url: str) -> Store:
    """Open the store named on the command line, or exit with a clear message."""
    try:
        return open_store(url)
    except ValueError as exc:
        raise fail(str(exc)) from None
    except Exception as exc:
        raise fail(f"cannot open store {url!r}: {exc}") from None


def when(at: float | None) -> str:
    return "" if at is None else datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def stop_dict(stop: StopRecord) -> dict[str, Any]:
    row: dict[str, Any] = redact(dataclasses.asdict(stop))  # stored redacted; again for rows older versions wrote
    return row


@stops_app.command("list")
def list_cmd(
    status: str = typer.Option("open", "--status", help="open, resolved or all."),
    limit: int = typer.Option(50, "--limit", "-n", min=1, help="At most this many, newest first."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
    store: str = STORE_OPTION,
) -> None:
    """List stop records, newest first."""
    if status not in ("open", "resolved", "all"):
        raise fail(f"--status must be open, resolved or all, got {status!r}")
    resolved = None if status == "all" else status == "resolved"
    db = connect(store)
    try:
        stops = db.list_stops(resolved=resolved, limit=limit)
    finally:
        db.close()
    if as_json:
        for stop in stops:
            typer.echo(json.dumps(stop_dict(stop), ensure_ascii=False, default=str))
        return
    if not stops:
        console.print(f"no {'' if status == 'all' else status + ' '}stop records in {store}")
        return
    table = Table("id", "at", "tool", "class", "code", "reason", "effect", "attempts", "resolved")
    for s in stops:
        table.add_row(s.id, when(s.at), s.tool, s.error_class, s.code, s.reason, s.effect_status, str(s.attempts),
                      when(s.resolved_at))
    console.print(table)


@stops_app.command("show")
def show_cmd(stop_id: str = typer.Argument(..., help="The stop id."), store: str = STORE_OPTION) -> None:
    """Print one stop record as JSON."""
    db = connect(store)
    try:
        stop = db.get_stop(stop_id)
    finally:
        db.close()
    if stop is None:
        raise fail(f"no stop record {stop_id!r} in {store}", code=1)
    print_json(stop_dict(stop))


@stops_app.command("resolve")
def resolve_cmd(
    stop_id: str = typer.Argument(..., help="The stop id."),
    note: str = typer.Option(..., "--note", "-m", help="What a person found and did."),
    effect: str | None = typer.Option(None, "--effect", help="What is now known of the effect: done or not_done."),
    store: str = STORE_OPTION,
) -> None:
    """Mark a stop record resolved, with what a person found (and, when settled, whether the effect happened)."""
    if effect is not None and effect not in ("done", "not_done", "unknown"):
        raise fail(f"--effect must be done, not_done or unknown, got {effect!r}")
    if not note.strip():
        raise fail("--note must say what was found and done")
    db = connect(store)
    try:
        stop = db.resolve_stop(stop_id, resolution=redact_text(note), effect_status=effect)  # type: ignore[arg-type]
    finally:
        db.close()
    if stop is None:
        raise fail(f"no stop record {stop_id!r} in {store}", code=1)
    print_json(stop_dict(stop))


def register(app: typer.Typer) -> None:
    app.add_typer(stops_app, name="stops")
