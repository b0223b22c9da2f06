"""Per-field failure counts of the schema harness, compared between two versions of the tools.

"Treat a schema change as an interface change: bump it, rerun the harness and compare per-field failure
counts before shipping." Counts are compared as rates (failures per call of the tool), so two runs with a
different number of calls still compare; a field whose rate rose by more than the tolerance is a regression.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FieldDelta:
    """One tool's field in the baseline and now: failures, calls of the tool, and the schema versions."""

    tool: str
    field: str
    old_failures: int
    old_calls: int
    new_failures: int
    new_calls: int
    old_version: str | None = None
    new_version: str | None = None
    regressed: bool = False

    @property
    def old_rate(self) -> float:
        return self.old_failures / self.old_calls if self.old_calls else float(self.old_failures > 0)

    @property
    def new_rate(self) -> float:
        return self.new_failures / self.new_calls if self.new_calls else float(self.new_failures > 0)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "old_rate": round(self.old_rate, 6), "new_rate": round(self.new_rate, 6)}


def _counts(report: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    return {(r["tool"], r["field"]): int(r["count"]) for r in report.get("per_field", ())}


def compare_fields(baseline: Mapping[str, Any], current: Mapping[str, Any], *,
                   tolerance: float = 0.0) -> list[FieldDelta]:
    """Every (tool, field) that failed in either report, worst change first."""
    old, new = _counts(baseline), _counts(current)
    old_calls, new_calls = dict(baseline.get("calls_per_tool", {})), dict(current.get("calls_per_tool", {}))
    old_v, new_v = dict(baseline.get("schema_versions", {})), dict(current.get("schema_versions", {}))
    out = []
    for tool, field in sorted(set(old) | set(new)):
        delta = FieldDelta(tool, field, old.get((tool, field), 0), int(old_calls.get(tool, 0)),
                           new.get((tool, field), 0), int(new_calls.get(tool, 0)), old_v.get(tool), new_v.get(tool))
        out.append(FieldDelta(**{**asdict(delta), "regressed": delta.new_rate > delta.old_rate + tolerance}))
    return sorted(out, key=lambda d: (-(d.new_rate - d.old_rate), d.tool, d.field))


def baseline_for(reports: Sequence[Mapping[str, Any]], label: str) -> Mapping[str, Any]:
    """The schema report of a baseline file to compare `label` with: the one with that label, else the only
    one. Raises ValueError when the file has none, or several and none with the label."""
    schema = [r for r in reports if r.get("kind") == "schema"]
    same = [r for r in schema if r.get("label") == label]
    if same:
        return same[0]
    if len(schema) == 1:
        return schema[0]
    raise ValueError(f"the baseline holds {len(schema)} schema reports and none labelled {label!r}")
