"""What a rule is: stable code and slug, severity, on-by-default, the why and the fix, and a check function."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from .._config import LintConfig
from .._findings import Severity
from .._model import ToolDef


@dataclass(frozen=True, slots=True)
class Hit:
    """What a check reports; the engine adds the rule's code, slug and severity."""

    tool: ToolDef | None
    pointer: str
    message: str
    fix: str = ""


ToolCheck = Callable[[ToolDef, LintConfig], Iterable[Hit]]
ToolsetCheck = Callable[[Sequence[ToolDef], LintConfig], Iterable[Hit]]


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    slug: str
    severity: Severity
    summary: str
    why: str
    fix: str
    tool_check: ToolCheck | None = None
    toolset_check: ToolsetCheck | None = None
    default_on: bool = True
    family: Literal["names", "descriptions", "params", "toolset", "effects"] = "names"

    def matches(self, selector: str) -> bool:
        """A selector is a code, a code prefix (`TP1`), a slug or `ALL`."""
        return selector == "ALL" or selector == self.slug or self.code.startswith(selector)
