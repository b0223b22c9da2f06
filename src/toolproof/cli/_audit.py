"""`toolproof audit tail|show|export|fields|verify`: the audit trail, one call's records with the tool's
exception, the per-field failure table for dashboards, and the check of the hash chain."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from typing import Annotated, Any

import typer

from ..audit._versions import failures_by_version
from ..contract._redaction import redact
from ..stores._chain import ChainReport
from ..stores._records import AuditRecord
from ._options import (
    DEFAULT_LIMIT,
    JsonOpt,
    LimitOpt,
    OutOpt,
    StoreOpt,
    command_group,
    fail,
    json_line,
    jsonable,
    open_existing,
    print_json_lines,
    print_record,
    print_table,
    say,
    shown_store,
    timestamp,
)
from ._stops import stop_dict

audit_app = command_group("The audit trail: every attempt of every call.")

_ALL = 10**9
ToolOpt = Annotated[str | None, typer.Option("--tool", help="Only this tool.")]


def record_dict(rec: AuditRecord) -> dict[str, Any]:
    row: dict[str, Any] = redact(dataclasses.asdict(rec))  # stored redacted; again for rows older versions wrote
    return row


def _records(store: str | None, limit: int, tool: str | None) -> list[AuditRecord]:
    """Up to `limit` of the newest records, oldest first."""
    db = open_existing(store)
    try:
        return list(reversed(db.list_audit(limit=limit, tool=tool)))
    finally:
        db.close()


@audit_app.command("tail")
def tail_cmd(limit: LimitOpt = DEFAULT_LIMIT, tool: ToolOpt = None, as_json: JsonOpt = False,
             store: StoreOpt = None) -> None:
    """The newest audit records, newest last (full call ids: one per call)."""
    records = _records(store, limit, tool)
    if as_json:
        print_json_lines(record_dict(r) for r in records)
        return
    if not records:
        say(f"no audit records in {shown_store(store)}")
        return
    print_table(("at", "tool", "call", "attempt", "validation", "outcome", "class", "code", "ms"),
                ((timestamp(r.at), r.tool, r.call_id, r.attempt, r.validation, r.outcome, r.error_class, r.code,
                  f"{r.latency_ms:.2f}") for r in records))


@audit_app.command("show")
def show_cmd(
    call_id: Annotated[str, typer.Argument(help="The call id (the envelope's meta.call_id).")],
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Every record of one call, oldest first: its attempts, then its stop record if it was given up on,
    each with the tool's exception and its redacted traceback (what the model was never shown)."""
    db = open_existing(store)
    try:
        attempts = list(reversed(db.list_audit(limit=_ALL, call_id=call_id)))
        stops = list(reversed(db.list_stops(limit=_ALL, call_id=call_id)))
    finally:
        db.close()
    if not attempts and not stops:
        raise fail(f"no audit or stop records for call {call_id!r} in {shown_store(store)}", code=1)
    rows = [{"record": "audit", **record_dict(r)} for r in attempts]
    rows += [{"record": "stop", **stop_dict(s)} for s in stops]
    if as_json:
        print_json_lines(rows)
        return
    for n, row in enumerate(rows):
        if n:
            say("")
        print_record(row)


@audit_app.command("export")
def export_cmd(
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl (the same as --json) or csv.")] = "jsonl",
    as_json: JsonOpt = False,
    out: OutOpt = None,
    tool: ToolOpt = None,
    store: StoreOpt = None,
) -> None:
    """Export the whole audit trail, oldest first, to stdout or --out FILE."""
    fmt = "jsonl" if as_json else fmt
    if fmt not in ("jsonl", "csv"):
        raise fail(f"--format must be jsonl or csv, got {fmt!r}")
    records = _records(store, _ALL, tool)
    text = _jsonl(records) if fmt == "jsonl" else _csv(records)
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8", newline="")
    except OSError as exc:
        raise fail(f"cannot write {out}: {exc}") from None
    say(f"wrote {len(records)} audit records to {out}", stderr=True)


def _jsonl(records: list[AuditRecord]) -> str:
    return "".join(json_line(record_dict(r)) + "\n" for r in records)


def _csv(records: list[AuditRecord]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[f.name for f in dataclasses.fields(AuditRecord)])
    writer.writeheader()
    for rec in records:
        row = jsonable(record_dict(rec))
        row["arguments"] = json.dumps(row["arguments"], ensure_ascii=False, default=str)
        row["failing_fields"] = ";".join(row["failing_fields"])
        writer.writerow(row)
    return buffer.getvalue()


@audit_app.command("fields")
def fields_cmd(
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    by_version: Annotated[bool, typer.Option("--by-version", help="Per schema version, oldest first, with the "
                                             "calls each version ran and the failure rate.")] = False,
    tool: ToolOpt = None,
) -> None:
    """Validation failures per tool x field x schema version, most frequent first."""
    if by_version:
        _fields_by_version(store, tool, as_json)
        return
    db = open_existing(store)
    try:
        rows = db.field_failures()
    finally:
        db.close()
    if as_json:
        print_json_lines({"tool": t, "field": f, "schema_version": v, "count": n} for t, f, v, n in rows)
        return
    if not rows:
        say(f"no validation failures in {shown_store(store)}")
        return
    print_table(("tool", "field", "schema_version", "count"), rows)


def _fields_by_version(store: str | None, tool: str | None, as_json: bool) -> None:
    """A failure spike maps to a change: each tool's versions in the order they were first seen, the calls
    each ran, and per field the calls it failed."""
    rows = [r.to_dict() for r in failures_by_version(_records(store, _ALL, tool))]
    if as_json:
        print_json_lines(rows)
        return
    if not rows:
        say(f"no audit records in {shown_store(store)}")
        return
    print_table(("tool", "schema_version", "first seen", "calls", "field", "failed", "rate"), (
        (r["tool"], r["schema_version"], timestamp(r["first_seen"]), r["calls"], r["field"], r["failed"],
         f"{100 * r['rate']:.1f}%") for r in rows))


@audit_app.command("verify")
def verify_cmd(
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    anchor: Annotated[list[str] | None, typer.Option(
        "--anchor", help="A head printed by an earlier verify (kept elsewhere): it must still be in the chain, "
                         "or the chain was rewritten or cut (repeatable: one per chain).")] = None,
) -> None:
    """Check the hash chain over the audit and stop records: name the first row edited, deleted or inserted
    after the fact, and print each chain's head to keep elsewhere. Exit 1 when a chain is broken."""
    anchors = list(anchor or [])
    db = open_existing(store)
    try:
        reports = [db.verify_chain("audit", anchors=anchors), db.verify_chain("stops", anchors=anchors)]
    except ValueError as exc:
        raise fail(str(exc)) from None
    finally:
        db.close()
    missing = [a for a in anchors if not any(a in r.anchors_found for r in reports)]
    if as_json:
        print_json_lines({**dataclasses.asdict(r), "ok": r.ok} for r in reports)
    else:
        for r in reports:
            say(_verdict(r))
    for a in missing:
        say(f"anchor {a}: NOT FOUND in either chain up to where it holds: rewritten or cut after it was taken")
    if missing or not all(r.ok for r in reports):
        raise typer.Exit(1)


def _verdict(r: ChainReport) -> str:
    """One line per chain: intact (and its head), or the first broken link and why."""
    before = f" ({r.unchained} written before the chain, not covered)" if r.unchained else ""
    if r.broken_at is not None:
        return f"{r.kind}: BROKEN at row {r.broken_at}: {r.why}; {r.rows} rows read{before}"
    head = f"head {r.head} (row {r.head_id})" if r.head else "no chained rows yet"
    return f"{r.kind}: intact, {r.rows} rows{before}; {head}"


def register(app: typer.Typer) -> None:
    app.add_typer(audit_app, name="audit")
