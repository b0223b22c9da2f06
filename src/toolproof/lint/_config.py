"""Lint configuration: which rules run, at what severity, with which thresholds.

Read from `[tool.toolproof.lint]` in pyproject.toml and overridden on the command line; a plain frozen value.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from ..contract._errors import DefinitionError
from ._findings import SEVERITIES

DEFAULT_THRESHOLDS: Final[Mapping[str, float]] = {
    "max-tools": 20,  # tools shown in one prompt before selection accuracy drops
    "max-params": 10,  # top-level parameters of one tool
    "min-description-words": 5,
    "max-name-length": 64,  # what OpenAI and Anthropic accept
    "lookalike-name": 0.85,  # same action (or none), Jaccard of the other canonical name words
    "lookalike-description": 0.3,  # ...and descriptions at least this similar (TF-IDF cosine), or one too short
    # Descriptions at least this similar by the static embedding model (cosine), whatever the names; 0: off.
    # Off by default: precise on the blind look-alike labels but low recall there (docs/lint.md).
    "lookalike-embedding": 0.0,
}


@dataclass(frozen=True, slots=True)
class LintConfig:
    """`select`/`ignore` take codes (`TP104`), code prefixes (`TP1`) or slugs (`name-generic`); `select`
    empty means every rule that is on by default. `per_tool_ignores` maps a tool name (or `*`-ending prefix)
    to codes or slugs. `severities` overrides a rule's severity by code or slug."""

    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_tool_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    severities: Mapping[str, str] = field(default_factory=dict)
    thresholds: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    #: Text -> unit vectors (`toolproof.retrieval.static.StaticEncoder`), loaded once per lint run when the
    #: embedding look-alike pass is on; None: that pass does not run.
    encoder: Any = field(default=None, compare=False, repr=False)

    def threshold(self, key: str) -> float:
        return float(self.thresholds.get(key, DEFAULT_THRESHOLDS[key]))

    def with_cli(self, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> LintConfig:
        """Command-line `--select` replaces the selection; `--ignore` adds to the ignore list."""
        sel = tuple(select)
        return replace(self, select=sel or self.select, ignore=(*self.ignore, *ignore))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> LintConfig:
        """Build from the `[tool.toolproof.lint]` table (dashes or underscores in keys)."""
        norm = {str(k).replace("_", "-"): v for k, v in data.items()}
        known = {"select", "extend-select", "ignore", "per-tool-ignores", "severity", "severities", "thresholds"}
        unknown = sorted(set(norm) - known)
        if unknown:
            raise DefinitionError(f"[tool.toolproof.lint]: unknown keys {unknown}; known: {sorted(known)}")
        severities = dict(norm.get("severity", {}) or {}) | dict(norm.get("severities", {}) or {})
        for key, value in severities.items():
            if value not in SEVERITIES:
                raise DefinitionError(f"[tool.toolproof.lint] severity of {key!r} must be one of {SEVERITIES}")
        thresholds = dict(DEFAULT_THRESHOLDS)
        for key, value in dict(norm.get("thresholds", {}) or {}).items():
            k = str(key).replace("_", "-")
            if k not in DEFAULT_THRESHOLDS:
                raise DefinitionError(f"[tool.toolproof.lint.thresholds]: unknown {key!r}; known: "
                                      f"{sorted(DEFAULT_THRESHOLDS)}")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise DefinitionError(f"[tool.toolproof.lint.thresholds] {key!r} must be a number")
            thresholds[k] = float(value)
        per_tool = {str(k): _strings(v, f"per-tool-ignores.{k}") for k, v in
                    dict(norm.get("per-tool-ignores", {}) or {}).items()}
        return cls(
            select=_strings(norm.get("select", []), "select"),
            extend_select=_strings(norm.get("extend-select", []), "extend-select"),
            ignore=_strings(norm.get("ignore", []), "ignore"),
            per_tool_ignores=per_tool,
            severities={str(k): str(v) for k, v in severities.items()},
            thresholds=thresholds,
        )

    @classmethod
    def from_pyproject(cls, path: str | Path) -> LintConfig:
        """Read `[tool.toolproof.lint]`; a file without that table gives the defaults."""
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise DefinitionError(f"cannot read lint configuration from {path}: {exc}") from None
        table = data.get("tool", {}).get("toolproof", {}).get("lint", {})
        if not isinstance(table, dict):
            raise DefinitionError("[tool.toolproof.lint] must be a table")
        return cls.from_mapping(table)


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise DefinitionError(f"[tool.toolproof.lint] {key} must be a list of strings")
    return tuple(value)
