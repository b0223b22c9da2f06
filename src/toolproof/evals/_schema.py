"""The schema harness: every call a model generated, through the production validator, counted per field.

Failures that cluster on one field point at the schema (a name without a unit, a missing enum, a vague
description); failures spread thinly over many fields look like model variance. The harness says which.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from ..catalog._toolset import Toolset
from ..contract._errors import InvalidArgument, UnknownTool
from ._model_errors import ModelErrorTally
from ._scoring import ToolCall

if TYPE_CHECKING:
    from ._selection import SelectionReport

CLUSTER_SHARE: Final = 0.5  # one field holding at least half of a tool's failures ...
CLUSTER_MIN: Final = 3  # ... and at least this many of them is a schema problem


@dataclass(frozen=True, slots=True)
class Rejection:
    tool: str
    field: str
    code: str
    received: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "field": self.field, "code": self.code, "received": self.received}


@dataclass(frozen=True, slots=True)
class SchemaReport:
    """Calls checked, calls rejected, and the rejections per tool and field (JSON: docs/evals.md, "schema")."""

    checked: int
    calls_per_tool: tuple[tuple[str, int], ...]
    rejections: tuple[Rejection, ...]
    model_errors: ModelErrorTally | None = None  # the runs that produced no calls to check

    @property
    def rejected(self) -> int:
        return len(self.rejections)

    def per_field(self) -> list[tuple[str, str, int]]:
        counter = Counter((r.tool, r.field) for r in self.rejections)
        return [(t, f, n) for (t, f), n in counter.most_common()]

    def diagnosis(self) -> list[str]:
        """One line per tool with failures: clustered on a field (fix the schema) or spread (model variance)."""
        lines = []
        by_tool: dict[str, Counter[str]] = {}
        for r in self.rejections:
            by_tool.setdefault(r.tool, Counter())[r.field] += 1
        for tool, fields in sorted(by_tool.items(), key=lambda kv: -sum(kv[1].values())):
            total = sum(fields.values())
            top, count = fields.most_common(1)[0]
            if count >= CLUSTER_MIN and count / total >= CLUSTER_SHARE:
                lines.append(f"{tool}: {count} of {total} rejections are on '{top}': a schema problem "
                             f"(check its name, unit, type, enum and description)")
            else:
                lines.append(f"{tool}: {total} rejections spread over {len(fields)} field(s): "
                             f"looks like model variance")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "schema",
            "checked": self.checked,
            "rejected": self.rejected,
            "calls_per_tool": dict(self.calls_per_tool),
            "per_field": [{"tool": t, "field": f, "count": n} for t, f, n in self.per_field()],
            "diagnosis": self.diagnosis(),
            "rejections": [r.to_dict() for r in self.rejections],
            "partial": bool(self.model_errors and self.model_errors.errors),
            "model_errors": self.model_errors.to_dict() if self.model_errors else None,
        }


def check_calls(calls: Iterable[ToolCall], toolset: Toolset) -> SchemaReport:
    """Validate each call with the tool's own production validator (`Tool.parse_arguments`)."""
    checked = 0
    per_tool: Counter[str] = Counter()
    rejections: list[Rejection] = []
    for call in calls:
        checked += 1
        per_tool[call.name] += 1
        try:
            tool = toolset.get(call.name)
        except UnknownTool:
            rejections.append(Rejection(call.name, "(tool name)", "UNKNOWN_TOOL", call.name))
            continue
        if call.arguments is None:
            rejections.append(Rejection(call.name, "(arguments)", "MALFORMED_JSON", call.raw_arguments))
            continue
        try:
            tool.parse_arguments(dict(call.arguments))
        except InvalidArgument as exc:
            rejections.append(Rejection(call.name, exc.field or "(arguments)", exc.code, exc.received))
    return SchemaReport(checked, tuple(sorted(per_tool.items())), tuple(rejections))


def check_report(report: SelectionReport, toolset: Toolset) -> SchemaReport:
    """Every call of a selection run through the validator, with the runs the model did not answer."""
    checked = check_calls((c for r in report.results for c in r.calls), toolset)
    return replace(checked, model_errors=report.model_errors)
