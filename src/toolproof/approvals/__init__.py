"""Approval requests: what the approval gate writes and the decisions people take on them.

The gate (`toolproof.pipeline.approval`) asks the store for the request of a gated call and writes a
new one when there is none; `approve`/`deny` are the one way a person decides, for the CLI
(`toolproof approvals`) and the inbox alike: a conditional write, so two people deciding the same request
apply one decision and the other hears "already decided by X". Every decision is an audit record.
"""

from __future__ import annotations

from .._surface import publish_all
from ._requests import (
    DEFAULT_TTL_S,
    AlreadyDecided,
    ApprovalNotFound,
    approve,
    approve_many,
    await_decision,
    decide,
    deny,
    list_requests,
    new_request,
    refusal,
    request_id,
    wait_for_decision,
)

__all__ = ["DEFAULT_TTL_S", "AlreadyDecided", "ApprovalNotFound", "approve", "approve_many", "await_decision",
           "decide", "deny", "list_requests", "new_request", "refusal", "request_id", "wait_for_decision"]

publish_all(globals())
