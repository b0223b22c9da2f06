"""The journal's row: one intended write, written before dispatch. Values only; `journal.py` drives them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

IntentStatus = Literal["in_flight", "done", "failed", "unknown"]
INTENT_STATUSES: Final[tuple[IntentStatus, ...]] = ("in_flight", "done", "failed", "unknown")


@dataclass(frozen=True, slots=True)
class Intent:
    """One write the runner meant to do.

    `status`: `in_flight` (claimed, being dispatched by `owner` until `lease_until`), `done` (succeeded;
    `outcome` holds the result, replayed to repeats), `failed` (ended with an error after dispatch, which
    is replayed), `unknown` (the effect may or may not have happened: nothing is dispatched for this
    operation until someone reconciles it). A released intent is deleted, so a corrected call can proceed.
    """

    key: str
    operation_id: str
    tool: str
    fingerprint: str
    arguments: Any  # secrets redacted
    status: IntentStatus
    created_at: float
    updated_at: float
    owner: str
    lease_until: float
    call_id: str | None = None
    conversation_id: str | None = None
    principal: str | None = None
    outcome: Any = None  # {"result": ...} or {"error": {...}}: what a repeat gets back
    resolution: str | None = None

    @property
    def fence(self) -> int:
        """The claim's fencing token: its claim time in microseconds. A takeover claims later than the holder
        it replaces (and never below it, `Journal.new_intent`), so the token grows with each takeover as long
        as the workers' clocks agree to within a lease; a tool passes it to its own store, which refuses a
        write carrying a smaller one (docs/idempotency.md, "Fencing")."""
        return int(self.created_at * 1_000_000)

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}
