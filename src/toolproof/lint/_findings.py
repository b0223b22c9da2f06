"""Lint findings are plain values: a rule code and slug, a severity, the tool, a JSON pointer, the fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from ..contract._values import value

Severity = Literal["error", "warning", "advice"]
SEVERITIES: Final = ("error", "warning", "advice")
_RANK: Final = {"advice": 1, "warning": 2, "error": 3}


def severity_rank(severity: str) -> int:
    """Higher is worse; unknown severities rank below advice."""
    return _RANK.get(severity, 0)


@value
@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a rule found in one tool definition (or one toolset, when `tool` is empty).

    `pointer` is an RFC 6901 JSON pointer into the tool definition as it was read (e.g.
    `/inputSchema/properties/quantity`); `source` names the file, module or server it came from. Built by
    `@value`, the project's one value constructor: a catalogue of 10,000 tools gives 100,000 findings.
    """

    code: str
    rule: str
    severity: Severity
    tool: str
    pointer: str
    message: str
    fix: str
    source: str = ""
    toolset: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def at_least(self, severity: str) -> bool:
        return severity_rank(self.severity) >= severity_rank(severity)


def escape_pointer(token: str) -> str:
    """One JSON pointer reference token (RFC 6901: `~` -> `~0`, `/` -> `~1`)."""
    return token.replace("~", "~0").replace("/", "~1")
