"""The approval request: one record per gated call (per idempotency key and arguments), decided once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

#: What the store holds; `expired` is also what a pending request past `expires_at` is shown as.
ApprovalStatus = Literal["pending", "approved", "denied", "expired"]
APPROVAL_STATUSES: tuple[ApprovalStatus, ...] = ("pending", "approved", "denied", "expired")


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """Who asked for what (arguments redacted), under which key, why it was gated, until when; and the
    decision: who, when, with what note."""

    id: str
    at: float  # unix time of the request
    tool: str
    call_id: str
    arguments: Any  # validated, secrets redacted
    idempotency_key: str
    fingerprint: str  # every argument: changed arguments are a new request
    reason: str
    expires_at: float
    status: ApprovalStatus = "pending"
    run_id: str | None = None
    conversation_id: str | None = None
    principal: str | None = None
    decided_by: str | None = None
    decided_at: float | None = None
    note: str | None = None

    def status_at(self, now: float) -> ApprovalStatus:
        """The status as of `now`: a pending request past its expiry is expired."""
        if self.status == "pending" and now > self.expires_at:
            return "expired"
        return self.status
