"""Render findings: rich text grouped by tool with a per-rule summary, JSON, and SARIF 2.1.0."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any, Final

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._version import __version__
from ._findings import Finding
from ._rules import ALL_RULES

_STYLE: Final = {"error": "bold red", "warning": "yellow", "advice": "cyan"}
_SARIF_LEVEL: Final = {"error": "error", "warning": "warning", "advice": "note"}
SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"


def to_json(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    return [f.to_dict() for f in findings]


def summary(findings: Sequence[Finding]) -> list[tuple[str, str, str, int, int]]:
    """(code, slug, severity, findings, tools) per rule that fired, in code order."""
    count: Counter[str] = Counter()
    tools: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    meta: dict[str, tuple[str, str]] = {}
    for f in findings:
        count[f.code] += 1
        tools[f.code].add((f.source, f.toolset, f.tool))
        meta[f.code] = (f.rule, f.severity)
    return [(code, *meta[code], count[code], len(tools[code])) for code in sorted(count)]


def render_text(findings: Sequence[Finding], console: Console, *, n_tools: int | None = None) -> None:
    """Findings grouped by source and tool, then one summary row per rule."""
    groups: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for f in findings:
        groups[(f.source, f.tool)].append(f)
    for (source, tool), items in groups.items():
        head = Text(tool or "(toolset)", style="bold")
        if source:
            head.append(f"  {source}", style="dim")
        console.print(head)
        for f in items:
            line = Text("  ")
            line.append(f"{f.severity:<7}", style=_STYLE.get(f.severity, ""))
            line.append(f" {f.code} {f.rule}", style="bold")
            line.append(f"  {f.pointer or '/'}\n", style="dim")
            line.append(f"          {f.message}\n")
            line.append(f"          fix: {f.fix}", style="green")
            console.print(line)
    table = Table(title="findings by rule")
    for col in ("code", "rule", "severity", "findings", "tools"):
        table.add_column(col, justify="right" if col in ("findings", "tools") else "left")
    for code, slug, severity, n, t in summary(findings):
        table.add_row(code, slug, Text(severity, style=_STYLE.get(severity, "")), str(n), str(t))
    console.print(table)
    by_sev = Counter(f.severity for f in findings)
    scope = f" in {n_tools} tools" if n_tools is not None else ""
    console.print(f"{len(findings)} findings{scope}: {by_sev['error']} error, {by_sev['warning']} warning, "
                  f"{by_sev['advice']} advice")


def to_sarif(findings: Sequence[Finding]) -> dict[str, Any]:
    """SARIF 2.1.0: one run, every rule described, each result located by file and logical tool/pointer."""
    rules = [{
        "id": r.code,
        "name": r.slug,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.why},
        "help": {"text": r.fix},
        "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity], "enabled": r.default_on},
        "properties": {"family": r.family},
    } for r in ALL_RULES]
    index = {r.code: i for i, r in enumerate(ALL_RULES)}
    results = []
    for f in findings:
        logical = f"{f.tool}{f.pointer}" if f.tool else (f.toolset or "toolset")
        location: dict[str, Any] = {"logicalLocations": [{"name": f.tool or f.toolset or "toolset",
                                                          "fullyQualifiedName": logical, "kind": "object"}]}
        if f.source and not f.source.startswith(("mcp:", "http://", "https://")) and ":" not in f.source[1:]:
            location["physicalLocation"] = {"artifactLocation": {"uri": f.source}}
        results.append({
            "ruleId": f.code,
            "ruleIndex": index.get(f.code, -1),
            "level": _SARIF_LEVEL.get(f.severity, "note"),
            "message": {"text": f"{f.message}. Fix: {f.fix}"},
            "locations": [location],
            "properties": {"rule": f.rule, "tool": f.tool, "pointer": f.pointer, "toolset": f.toolset},
        })
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "toolproof-lint", "version": __version__,
                                "informationUri": "https://github.com/toolproof/toolproof/blob/main/docs/lint.md",
                                "rules": rules}},
            "results": results,
        }],
    }
