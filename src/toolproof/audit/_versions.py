"""Failures by schema version: each audit record carries the `schema_version` its call ran against, so a
failure spike maps to the change that caused it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Final

from ..stores._records import AuditRecord

#: The row that counts a version's calls that failed on any field.
ANY_FIELD: Final = "(any field)"


@dataclass(frozen=True, slots=True)
class VersionFailures:
    """One tool version's calls, and of them the calls that failed validation on `field`."""

    tool: str
    schema_version: str
    first_seen: float
    calls: int
    field: str
    failed: int

    @property
    def rate(self) -> float:
        return self.failed / self.calls if self.calls else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rate": round(self.rate, 6)}


def failures_by_version(records: Iterable[AuditRecord]) -> list[VersionFailures]:
    """Per tool, its versions in the order first seen; per version a row for any field, then one per field
    that failed (most failed first). Calls are counted once however many attempts they made."""
    first: dict[tuple[str, str], float] = {}
    calls: dict[tuple[str, str], set[str]] = defaultdict(set)
    failed: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for rec in records:
        key = (rec.tool, rec.schema_version or "(none)")
        first[key] = min(first.get(key, rec.at), rec.at)
        call = rec.call_id or f"{rec.at}"
        calls[key].add(call)
        for name in rec.failing_fields:
            failed[key][name].add(call)
            failed[key][ANY_FIELD].add(call)
    rows = []
    for key in sorted(first, key=lambda k: (k[0], first[k])):
        n = len(calls[key])
        rows.append(VersionFailures(*key, first[key], n, ANY_FIELD, len(failed[key].get(ANY_FIELD, ()))))
        fields = sorted(((f, len(c)) for f, c in failed[key].items() if f != ANY_FIELD), key=lambda fc: -fc[1])
        rows.extend(VersionFailures(*key, first[key], n, f, c) for f, c in fields)
    return rows
