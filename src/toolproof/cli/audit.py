"""`toolproof audit tail|export|fields`: the audit trail, and the per-field failure table for dashboards."""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ..contract.redaction import redact
from ..stores.records import AuditRecord
from ._common import console, fail, print_json
from .stops import STORE_OPTION, connect, when

audit_app = typer.Typer(help="The audit trail: every attempt of every call.", no_args_is_help=True)

_ALL = 10**9


def record_dict(rec: AuditRecord) -> dict[str, Any]:
    row: dict[str, Any] = redact(dataclasses.asdict(rec))  # stored redacted; again for rows older versions wrote
    return row


@audit_app.command("tail")
def tail_cmd(
    limit: int = typer.Option(20, "--limit", "-n", min=1, help="How many of the newest records."),
    tool: str | None = typer.Option(None, "--tool", help="Only this tool."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
    store: str = STORE_OPTION,
) -> None:
    """The newest audit records, newest last."""
    db = connect(store)
    try:
        records = list(reversed(db.list_audit(limit=limit, tool=tool)))
    finally:
        db.close()
    if as_json:
        for rec in records:
            typer.echo(json.dumps(record_dict(rec), ensure_ascii=False, default=str))
        return
    if not records:
        console.print(f"no audit records in {store}")
        return
    table = Table("at", "tool", "call", "attempt", "validation", "outcome", "class", "code", "ms")
    for r in records:
        table.add_row(when(r.at), r.tool, r.call_id[:12], str(r.attempt), r.validation, r.outcome,
                      r.error_class or "", r.code or "", f"{r.latency_ms:.2f}")
    console.print(table)


@audit_app.command("export")
def export_cmd(
    fmt: str = typer.Option("jsonl", "--format", "-f", help="jsonl or csv."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
    tool: str | None = typer.Option(None, "--tool", help="Only this tool."),
    store: str = STORE_OPTION,
) -> None:
    """Export the whole audit trail, oldest first."""
    if fmt not in ("jsonl", "csv"):
        raise fail(f"--format must be jsonl or csv, got {fmt!r}")
    db = connect(store)
    try:
        records = list(reversed(db.list_audit(limit=_ALL, tool=tool)))
    finally:
        db.close()
    out = output.open("w", encoding="utf-8", newline="") if output is not None else sys.stdout
    try:
        if fmt == "jsonl":
            for rec in records:
                out.write(json.dumps(record_dict(rec), ensure_ascii=False, default=str) + "\n")
        else:
            names = [f.name for f in dataclasses.fields(AuditRecord)]
            writer = csv.DictWriter(out, fieldnames=names)
            writer.writeheader()
            for rec in records:
                row = record_dict(rec)
                row["arguments"] = json.dumps(row["arguments"], ensure_ascii=False, default=str)
                row["failing_fields"] = ";".join(row["failing_fields"])
                writer.writerow(row)
    finally:
        if output is not None:
            out.close()
    if output is not None:
        console.print(f"wrote {len(records)} audit records to {output}")


@audit_app.command("fields")
def fields_cmd(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    store: str = STORE_OPTION,
) -> None:
    """Validation failures per tool x field x schema version, most frequent first."""
    db = connect(store)
    try:
        rows = db.field_failures()
    finally:
        db.close()
    if as_json:
        print_json([{"tool": t, "field": f, "schema_version": v, "count": n} for t, f, v, n in rows])
        return
    if not rows:
        console.print(f"no validation failures in {store}")
        return
    table = Table("tool", "field", "schema_version", "count")
    for t, f, v, n in rows:
        table.add_row(t, f, v or "", str(n))
    console.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(audit_app, name="audit")
