"""`toolproof approvals list|show|approve|deny`: the calls waiting for a person, from a store."""

from __future__ import annotations

import dataclasses
import getpass
import time
from typing import Annotated, Any

import typer

from ..approvals import AlreadyDecided, ApprovalNotFound, decide, list_requests
from ..contract._redaction import redact
from ..stores._approval import APPROVAL_STATUSES, ApprovalRequest
from ._options import (
    DEFAULT_LIMIT,
    JsonOpt,
    LimitOpt,
    NoteOpt,
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

approvals_app = command_group("Approval requests: calls that wait for a person's decision.")

IdArg = Annotated[str, typer.Argument(help="The approval request id (apr_...).")]
ByOpt = Annotated[str | None, typer.Option("--by", help="Who decides (default: the login name).")]
STATUS_CHOICES = (*APPROVAL_STATUSES, "all")
_TIMES = ("expires_at", "decided_at")


def approval_dict(request: ApprovalRequest, now: float | None = None) -> dict[str, Any]:
    """A request as printed: its status as of now (pending past expiry is expired), times as RFC 3339."""
    row: dict[str, Any] = redact(dataclasses.asdict(request))  # stored redacted; again for safety
    row["status"] = request.status_at(time.time() if now is None else now)
    for key in _TIMES:
        row[key] = timestamp(row[key])
    return row


@approvals_app.command("list")
def list_cmd(
    status: Annotated[str, typer.Option("--status", help="pending, approved, denied, expired or all.")] = "pending",
    limit: LimitOpt = DEFAULT_LIMIT,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """List approval requests, newest first."""
    if status not in STATUS_CHOICES:
        raise fail(f"--status must be one of {', '.join(STATUS_CHOICES)}, got {status!r}")
    db = open_existing(store)
    try:
        rows = list_requests(db, status, limit)
    finally:
        db.close()
    if as_json:
        print_json_lines(approval_dict(r) for r in rows)
        return
    if not rows:
        say(f"no {'' if status == 'all' else status + ' '}approval requests in {shown_store(store)}")
        return
    print_table(("id", "at", "tool", "status", "reason", "expires", "decided by"),
                ((r.id, timestamp(r.at), r.tool, r.status_at(time.time()), r.reason, timestamp(r.expires_at),
                  r.decided_by) for r in rows))


@approvals_app.command("show")
def show_cmd(request_id: IdArg, as_json: JsonOpt = False, store: StoreOpt = None) -> None:
    """Print one approval request: who asked for what, under which key, why, until when; and the decision."""
    db = open_existing(store)
    try:
        found = db.approval_get(request_id)
    finally:
        db.close()
    if found is None:
        raise fail(f"no approval request {request_id!r} in {shown_store(store)}", code=1)
    if as_json:
        print_json_lines([approval_dict(found)])
    else:
        print_record(approval_dict(found))


def _decide(request_id: str, approve: bool, by: str | None, note: str | None, store: str | None,
            as_json: bool) -> None:
    db = open_existing(store)
    try:
        decided = decide(db, request_id, approve=approve, by=by or getpass.getuser(), note=note)
    except ApprovalNotFound:
        raise fail(f"no approval request {request_id!r} in {shown_store(store)}", code=1) from None
    except AlreadyDecided as exc:
        raise fail(str(exc), code=1) from None
    finally:
        db.close()
    if as_json:
        print_json_lines([approval_dict(decided)])
        return
    say(f"{request_id}: {decided.status} by {decided.decided_by}"
        + (" (the same call now runs once when the agent makes it again)" if approve else ""))


@approvals_app.command("approve")
def approve_cmd(request_id: IdArg, by: ByOpt = None, note: NoteOpt = None, as_json: JsonOpt = False,
                store: StoreOpt = None) -> None:
    """Approve a pending request: the same call (same key, same arguments) then runs exactly once."""
    _decide(request_id, True, by, note, store, as_json)


@approvals_app.command("deny")
def deny_cmd(
    request_id: IdArg,
    note: Annotated[str, typer.Option("--note", help="Why: the agent relays it to the person.")],
    by: ByOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Deny a pending request, saying why: the call never runs, and the agent is told so."""
    if not note.strip():
        raise fail("--note must say why the request is denied")
    _decide(request_id, False, by, note, store, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(approvals_app, name="approvals")
