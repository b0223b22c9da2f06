"""The records of the approval gate and the one decision function (see the package docstring)."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from ..contract._approval import ApprovalRefused, ApprovalRequired
from ..contract._context import CallContext, new_call_id
from ..contract._errors import ToolError
from ..contract._redaction import redact_arguments, redact_text
from ..contract._tool import Tool
from ..stores._approval import ApprovalRequest, ApprovalStatus
from ..stores._base import Store
from ..stores._records import AuditRecord

#: How long a request waits for a person before it expires (a runner's `approval_ttl_s` overrides it).
DEFAULT_TTL_S: Final = 24 * 3600.0
_PREFIX: Final = "apr_"
_ALL: Final = 1_000_000  # pending requests are few: filtered by expiry here, not in SQL


class ApprovalNotFound(LookupError):
    """No approval request has this id."""


class AlreadyDecided(Exception):
    """The request was decided before (by someone else, or it expired): this decision was not applied."""

    def __init__(self, request: ApprovalRequest, now: float) -> None:
        self.request = request
        status = request.status_at(now)
        if status == "expired":
            text = f"approval request {request.id} expired at {_rfc3339(request.expires_at)}; nobody decided it"
        else:
            text = (f"approval request {request.id} was already {status} by {request.decided_by} "
                    f"at {_rfc3339(request.decided_at)}")
        super().__init__(text)


def request_id(key: str, fingerprint: str) -> str:
    """One request per idempotency key and arguments: the same call finds its request, changed arguments make
    a new one."""
    return _PREFIX + hashlib.sha256(f"{key}|{fingerprint}".encode()).hexdigest()[:24]


def new_request(
    tool: Tool, arguments: Mapping[str, Any], context: CallContext, *, key: str, fingerprint: str, reason: str,
    now: float, ttl_s: float = DEFAULT_TTL_S,
) -> ApprovalRequest:
    """The pending request of a gated call: its arguments redacted as the audit trail keeps them."""
    return ApprovalRequest(
        id=request_id(key, fingerprint), at=now, tool=tool.name, call_id=context.call_id or "",
        arguments=redact_arguments(tool, dict(arguments), validated=True), idempotency_key=key,
        fingerprint=fingerprint, reason=redact_text(reason), expires_at=now + ttl_s, run_id=context.run_id,
        conversation_id=context.conversation_id, principal=context.principal,
    )


def refusal(request: ApprovalRequest, now: float) -> ToolError | None:
    """What the model gets for a gated call: None once approved (it runs), else the error that says why not."""
    status = request.status_at(now)
    if status == "approved":
        return None
    state = {"approval_id": request.id, "status": status, "reason": request.reason,
             "expires_at": _rfc3339(request.expires_at)}
    if status == "pending":
        return ApprovalRequired(
            f"A person must approve this call before it runs ({request.reason}). It has not run.",
            state=state, idempotency_key=request.idempotency_key, effect_done=False,
            hint=f"Tell the person that this action waits for an operator's approval (request {request.id}). "
                 "Do not retry, rephrase or split it; once approved, the same call runs exactly once.")
    if status == "denied":
        said = f": {request.note}" if request.note else ""
        return ApprovalRefused(
            f"{request.decided_by} denied this call{said}. It did not run and will not run.",
            state={**state, "decided_by": request.decided_by, "note": request.note},
            idempotency_key=request.idempotency_key, effect_done=False,
            hint="Tell the person it was denied and why; do not retry or rephrase it.")
    return ApprovalRefused(
        f"Nobody approved this call before {_rfc3339(request.expires_at)}. It did not run.",
        code="APPROVAL_EXPIRED", state=state, idempotency_key=request.idempotency_key, effect_done=False,
        hint="Tell the person the approval expired; do not retry it unless they ask again.")


def decide(store: Store, request_id: str, *, approve: bool, by: str, note: str | None = None,
           now: float | None = None) -> ApprovalRequest:
    """Approve or deny a pending request, once: raises `AlreadyDecided` (naming who decided) when it was
    decided or has expired, `ApprovalNotFound` when there is none. The decision is an audit record."""
    if not by.strip():
        raise ValueError("a decision needs the name of the person who takes it")
    at = time.time() if now is None else now
    found = store.approval_get(request_id)
    if found is None:
        raise ApprovalNotFound(f"no approval request {request_id!r}")
    if found.status_at(at) == "expired" and found.status == "pending":
        store.approval_decide(request_id, "expired", by="toolproof", note=None, now=at)
    shown_note = redact_text(note) if note and note.strip() else None
    applied = found.status_at(at) == "pending" and store.approval_decide(
        request_id, "approved" if approve else "denied", by=by, note=shown_note, now=at)
    after = store.approval_get(request_id) or found
    if not applied:
        raise AlreadyDecided(after, at)
    store.append_audit([decision_audit(after)])
    return after


def approve(store: Store, request_id: str, *, by: str, note: str | None = None) -> ApprovalRequest:
    """`decide(..., approve=True)`."""
    return decide(store, request_id, approve=True, by=by, note=note)


def deny(store: Store, request_id: str, *, by: str, note: str | None = None) -> ApprovalRequest:
    """`decide(..., approve=False)`."""
    return decide(store, request_id, approve=False, by=by, note=note)


def approve_many(store: Store, request_ids: list[str], *, by: str,
                 note: str | None = None) -> list[ApprovalRequest | Exception]:
    """Approve several requests, each on its own (`decide` once per request, each audited): one already
    decided or missing does not stop the others; its place in the answer holds the reason it was not applied."""
    done: list[ApprovalRequest | Exception] = []
    for rid in dict.fromkeys(request_ids):
        try:
            done.append(approve(store, rid, by=by, note=note))
        except (AlreadyDecided, ApprovalNotFound) as exc:
            done.append(exc)
    return done


def decision_audit(request: ApprovalRequest) -> AuditRecord:
    """The audit row of a decision: who, when, which request, with what note."""
    return AuditRecord(
        at=request.decided_at or time.time(), call_id=new_call_id(), tool=request.tool, schema_version=None,
        arguments={"decision": request.status, "approval_id": request.id, "note": request.note,
                   "requested_call_id": request.call_id},
        validation="skipped", attempt=0, latency_ms=0.0, outcome=f"approval_{request.status}",
        run_id=request.run_id, conversation_id=request.conversation_id, principal=request.decided_by,
        code=f"APPROVAL_{request.status.upper()}", idempotency_key=request.idempotency_key,
    )


def wait_for_decision(store: Store, request_id: str, *, timeout_s: float, poll_s: float = 0.25,
                      sleep: Callable[[float], None] = time.sleep) -> ApprovalRequest:
    """Poll until the request is decided or expired, or `timeout_s` passed (then it is returned pending)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = _found(store.approval_get(request_id), request_id)
        if found.status_at(time.time()) != "pending" or time.monotonic() >= deadline:
            return found
        sleep(min(poll_s, max(deadline - time.monotonic(), 0.0)))


async def await_decision(store: Store, request_id: str, *, timeout_s: float, poll_s: float = 0.25) -> ApprovalRequest:
    """`wait_for_decision` for the event loop (the store is read off the loop)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = _found(await store.aapproval_get(request_id), request_id)
        if found.status_at(time.time()) != "pending" or time.monotonic() >= deadline:
            return found
        await asyncio.sleep(min(poll_s, max(deadline - time.monotonic(), 0.0)))


def list_requests(store: Store, status: str = "pending", limit: int = 100) -> list[ApprovalRequest]:
    """Requests newest first by their status as of now (a pending one past its expiry is expired), or all."""
    if status == "all":
        return store.approval_list(limit=limit)
    now = time.time()
    stored: tuple[ApprovalStatus, ...] = ("pending", "expired") if status == "expired" else (status,)  # type: ignore[assignment]
    rows = [r for s in stored for r in store.approval_list(status=s, limit=_ALL if s == "pending" else limit)]
    rows = [r for r in rows if r.status_at(now) == status]
    rows.sort(key=lambda r: r.at, reverse=True)
    return rows[:limit]


def _found(request: ApprovalRequest | None, request_id: str) -> ApprovalRequest:
    if request is None:
        raise ApprovalNotFound(f"no approval request {request_id!r}")
    return request


def _rfc3339(at: float | None) -> str | None:
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
