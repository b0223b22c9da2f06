"""What a person's console asks a store: filtered, counted pages of audit records, approval requests and stop
records, cut by an opaque cursor so every row stays reachable however large the store grows.

A `Page` says how many rows match in the whole store (`total`) and where it starts (`start`): a list that is
cut says so. The SQL stores answer with keyset queries (`stores/_sql.py`); this module's fallbacks answer
for any other store from its plain list methods (the in-memory store holds at most its `max_audit` rows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Generic, Literal, TypeVar

from ._approval import ApprovalRequest
from ._records import AuditRecord, StopRecord

__all__ = ["AuditQuery", "AuditTally", "Order", "Page", "StopGroup", "prefix_of"]

T = TypeVar("T")
Order = Literal["newest", "oldest"]


def prefix_of(value: str | None, text: str) -> bool:
    """Whether `text` starts `value`, ignoring case: the one matching rule of every search field."""
    return value is not None and value.lower().startswith(text.lower())


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Which audit records a search asks for. Every text field matches a prefix, ignoring case; `text` is an
    id a person pastes: a call id or an idempotency key (both indexed); `since` <= at < `until`."""

    text: str | None = None
    tool: str | None = None
    error_class: str | None = None
    principal: str | None = None
    conversation_id: str | None = None
    run_id: str | None = None
    since: float | None = None
    until: float | None = None

    #: The record fields `text` is looked for in.
    TEXT_FIELDS: ClassVar[tuple[str, ...]] = ("call_id", "idempotency_key")
    #: The record fields that match their own value.
    FIELDS: ClassVar[tuple[str, ...]] = ("tool", "error_class", "principal", "conversation_id", "run_id")

    def matches(self, r: AuditRecord) -> bool:
        """The rule the SQL stores apply in their WHERE clause, for stores without SQL."""
        if self.text and not any(prefix_of(getattr(r, name), self.text) for name in self.TEXT_FIELDS):
            return False
        if any(getattr(self, name) and not prefix_of(getattr(r, name), getattr(self, name)) for name in self.FIELDS):
            return False
        return (self.since is None or r.at >= self.since) and (self.until is None or r.at < self.until)


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a list: its rows, how many rows match in all (`total`), how many come before this page
    (`start`), and the cursor of the next page (None on the last)."""

    rows: list[T]
    total: int
    start: int = 0
    next: str | None = None

    @property
    def end(self) -> int:
        return self.start + len(self.rows)


@dataclass(frozen=True, slots=True)
class StopGroup:
    """Open stop records that are alike (same tool, class, code and reason): one line for the operator."""

    tool: str
    error_class: str
    code: str
    reason: str
    count: int
    first_at: float
    last_at: float

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.tool, self.error_class, self.code, self.reason


@dataclass(frozen=True, slots=True)
class AuditTally:
    """How many calls (not decisions or reconciliations) had one tool, class, code and outcome."""

    tool: str
    error_class: str | None
    code: str | None
    outcome: str
    count: int


def page_by_offset(rows: Sequence[T], limit: int, cursor: str | None) -> Page[T]:
    """A page of an already ordered, already filtered list; the cursor is the offset (stores without SQL)."""
    start = int(cursor) if cursor and cursor.isdigit() else 0
    shown = list(rows[start:start + limit])
    more = start + limit < len(rows)
    return Page(shown, len(rows), start, str(start + limit) if more else None)


def audit_page(records: Sequence[AuditRecord], query: AuditQuery, *, order: Order, limit: int,
               cursor: str | None) -> Page[AuditRecord]:
    """The fallback of `Store.audit_page`: `records` newest first."""
    found = [r for r in records if query.matches(r)]
    return page_by_offset(found if order == "newest" else found[::-1], limit, cursor)


def pending_first(now: float) -> tuple[Callable[[ApprovalRequest], bool], Callable[[ApprovalRequest], object]]:
    """Which requests still wait as of `now`, and their order: the one expiring first at the top."""
    return (lambda r: r.status_at(now) == "pending"), (lambda r: (r.expires_at, r.id))


def decided_last(r: ApprovalRequest) -> tuple[float, str]:
    """The order of decided (and expired) requests: by when it was decided (or expired), newest first."""
    return (r.decided_at if r.decided_at is not None else r.expires_at, r.id)


def group_stops(stops: Sequence[StopRecord]) -> list[StopGroup]:
    """Open stops grouped by (tool, class, code, reason), the largest group first."""
    groups: dict[tuple[str, str, str, str], list[StopRecord]] = {}
    for s in stops:
        groups.setdefault((s.tool, s.error_class, s.code, s.reason), []).append(s)
    out = [StopGroup(*k, count=len(v), first_at=min(s.at for s in v), last_at=max(s.at for s in v))
           for k, v in groups.items()]
    return sorted(out, key=lambda g: (-g.count, g.tool, g.code))
