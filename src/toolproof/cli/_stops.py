"""`toolproof stops list|show|resolve`: the give-ups a person must act on, from a store."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer

from ..contract._redaction import redact, redact_text
from ..stores import Store
from ..stores._records import StopRecord
from ._options import (
    DEFAULT_LIMIT,
    ForceOpt,
    JsonOpt,
    LimitOpt,
    StoreOpt,
    command_group,
    fail,
    open_existing,
    print_json_lines,
    print_record,
    print_table,
    say,
    shown_store,
    timestamp,
)

stops_app = command_group("Stop records: calls the orchestrator gave up on.")

StopArg = Annotated[str, typer.Argument(help="The stop id.")]
EFFECTS = ("done", "not_done", "unknown")


def stop_dict(stop: StopRecord) -> dict[str, Any]:
    row: dict[str, Any] = redact(dataclasses.asdict(stop))  # stored redacted; again for rows older versions wrote
    return row


@stops_app.command("list")
def list_cmd(
    status: Annotated[str, typer.Option("--status", help="open, resolved or all.")] = "open",
    limit: LimitOpt = DEFAULT_LIMIT,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """List stop records, newest first."""
    if status not in ("open", "resolved", "all"):
        raise fail(f"--status must be open, resolved or all, got {status!r}")
    resolved = None if status == "all" else status == "resolved"
    db = open_existing(store)
    try:
        stops = db.list_stops(resolved=resolved, limit=limit)
    finally:
        db.close()
    if as_json:
        print_json_lines(stop_dict(s) for s in stops)
        return
    if not stops:
        say(f"no {'' if status == 'all' else status + ' '}stop records in {shown_store(store)}")
        return
    print_table(("id", "at", "tool", "class", "code", "reason", "effect", "attempts", "resolved"),
                ((s.id, timestamp(s.at), s.tool, s.error_class, s.code, s.reason, s.effect_status, s.attempts,
                  timestamp(s.resolved_at)) for s in stops))


@stops_app.command("show")
def show_cmd(stop_id: StopArg, as_json: JsonOpt = False, store: StoreOpt = None) -> None:
    """Print one stop record."""
    db = open_existing(store)
    try:
        stop = _get(db, stop_id, store)
    finally:
        db.close()
    if as_json:
        print_json_lines([stop_dict(stop)])
    else:
        print_record(stop_dict(stop))


def _get(db: Store, stop_id: str, store: str | None) -> StopRecord:
    stop = db.get_stop(stop_id)
    if stop is None:
        raise fail(f"no stop record {stop_id!r} in {shown_store(store)}", code=1)
    return stop


@stops_app.command("resolve")
def resolve_cmd(
    stop_id: StopArg,
    note: Annotated[str, typer.Option("--note", help="What a person found and did.")],
    effect: Annotated[str | None, typer.Option("--effect", help="What is now known of the effect: done, "
                                                                "not_done or unknown.")] = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Mark an open stop record resolved, with what a person found (and, when settled, whether the effect
    happened). A resolved record is refused unless --force. Prints the record as the store now holds it."""
    if effect is not None and effect not in EFFECTS:
        raise fail(f"--effect must be done, not_done or unknown, got {effect!r}")
    if not note.strip():
        raise fail("--note must say what was found and done")
    db = open_existing(store)
    try:
        before = _get(db, stop_id, store)
        if before.resolved_at is not None and not force:
            raise fail(f"stop record {stop_id!r} was resolved at {timestamp(before.resolved_at)} "
                       f"({before.resolution!r}); give --force to resolve it again", code=1)
        db.resolve_stop(stop_id, resolution=redact_text(note), effect_status=effect)  # type: ignore[arg-type]
        after = _get(db, stop_id, store)
        _journal_hint(db, after.idempotency_key)
    finally:
        db.close()
    if as_json:
        print_json_lines([stop_dict(after)])
        return
    say(f"{stop_id}: resolved in {shown_store(store)}")
    print_record(stop_dict(after))


def _journal_hint(db: Store, key: str | None) -> None:
    """Resolving a stop does not settle its journal entry: while that is `unknown`, say so and how."""
    entry = db.journal_get(key) if key else None
    if entry is not None and entry.status == "unknown":
        say(f"note: the journal entry {key} is still unknown, so repeats of the call stay blocked; settle it with "
            f"`toolproof journal resolve {key} --done` or `--not-done`", stderr=True)


def register(app: typer.Typer) -> None:
    app.add_typer(stops_app, name="stops")
