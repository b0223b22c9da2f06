"""The audit search form: what a person types, read into an `AuditQuery`, or refused with a reason."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from ..stores._query import AuditQuery, Order

__all__ = ["FIELDS", "BadSearch", "Search", "parse_time"]

#: (query parameter, placeholder, tooltip) of each search field, in the form's order.
FIELDS: Final = (
    ("q", "call id or key", "the start of a call id or an idempotency key, any case"),
    ("tool", "tool", "the start of a tool name, any case"),
    ("error_class", "class", "the start of an error class, e.g. transient"),
    ("principal", "principal", "who asked (the start, any case)"),
    ("conversation", "conversation", "the start of a conversation id"),
    ("run", "run", "the start of a run id"),
    ("since", "since (UTC unless +hh:mm)", "2026-12-01, 2026-12-01 21:21 or 2026-12-01T21:21+01:00"),
    ("until", "until (UTC unless +hh:mm)", "before this time; a date alone includes that whole day"),
)
_SHAPES: Final = "2026-12-01, 2026-12-01 21:21, 2026-12-01T21:21:00+01:00 or ...Z (a time without a zone is UTC)"


class BadSearch(ValueError):
    """A search field that cannot be read; the message says which and what it accepts."""


def parse_time(name: str, text: str, *, upper: bool = False) -> float:
    """A time a person typed, as a unix time. Without a zone it is UTC (the pages show UTC); a date alone is
    its midnight, or for an upper bound (`until`) the next midnight, so the whole day is included."""
    raw = text.strip()
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        raise BadSearch(f"{name}: {raw!r} is not a time; write {_SHAPES}") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    if upper and len(raw) == 10:
        at += timedelta(days=1)
    return at.timestamp()


@dataclass(frozen=True, slots=True)
class Search:
    """The audit page's request: the filter, the order and where the page starts."""

    query: AuditQuery
    order: Order
    cursor: str | None
    values: dict[str, str]  # the fields as typed, to fill the form again

    @classmethod
    def read(cls, params: Mapping[str, str]) -> Search:
        """Read the query parameters; `BadSearch` names a field that cannot be read."""
        values = {name: params.get(name, "").strip() for name, _, _ in FIELDS}
        order = params.get("order", "newest")
        if order not in ("newest", "oldest"):
            raise BadSearch(f"order: {order!r} is not newest or oldest")
        since = parse_time("since", values["since"]) if values["since"] else None
        until = parse_time("until", values["until"], upper=True) if values["until"] else None
        if since is not None and until is not None and until <= since:
            raise BadSearch("until: it must be later than since")
        query = AuditQuery(text=values["q"] or None, tool=values["tool"] or None,
                           error_class=values["error_class"] or None, principal=values["principal"] or None,
                           conversation_id=values["conversation"] or None, run_id=values["run"] or None,
                           since=since, until=until)
        return cls(query, order, params.get("after") or None, values)  # type: ignore[arg-type]
