"""The chaos report: a text table, JSON rows and the HTML page of `toolproof eval` (evals.report's style)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..evals._report import bar_chart, html_page
from ._run import Row

if TYPE_CHECKING:
    from ._conformance import Check

__all__ = ["REPORT_KIND", "print_checks", "print_rows", "render_html", "summary"]

REPORT_KIND: Final = "chaos"


def _effects(row: Mapping[str, Any]) -> str:
    if row["effects"] is None:
        return "-"
    return f"{row['effects']} DOUBLE" if row["double_effect"] else str(row["effects"])


def _recovered(row: Mapping[str, Any]) -> str:
    if row["calls"] == 0:
        return "-"
    return str(row["calls_to_recover"]) if row["calls_to_recover"] is not None else "never"


def _told(row: Mapping[str, Any]) -> str:
    told = row["told"]
    if not told:
        return row["counted"] if row["effects"] is None else ""
    return " | ".join(told)


def summary(rows: Sequence[Row]) -> dict[str, Any]:
    """Per tool and way through: how many observable scenarios ran, how many had a double effect."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.tool, r.through), []).append(r)
    per: list[dict[str, Any]] = []
    for (tool, through), group in groups.items():
        seen = [r for r in group if r.effects is not None]
        doubles = [r.scenario for r in seen if r.double_effect]
        per.append({"tool": tool, "through": through, "observed": len(seen), "double_effects": len(doubles),
                    "double_effect_rate": round(len(doubles) / len(seen), 3) if seen else None,
                    "scenarios_with_double_effect": doubles,
                    "not_counted": [r.scenario for r in group if r.effects is None]})
    total = [r for r in rows if r.effects is not None]
    verified = [r for r in rows if r.caught is not None]
    return {"kind": "summary", "report": REPORT_KIND, "observed": len(total),
            "double_effects": sum(r.double_effect for r in total), "per_tool": per,
            "did_nothing_caught": sum(bool(r.caught) for r in verified), "did_nothing_checked": len(verified)}


def print_rows(rows: Sequence[Row], console: Console, *, title: str) -> None:
    table = Table("tool", "through", "scenario", "effects", "calls", "calls to recover", "what the caller was told",
                  title=Text(title))
    for r in (row.to_dict() for row in rows):
        style = "bold red" if r["double_effect"] else None
        table.add_row(Text(r["tool"]), Text(r["through"]), Text(r["scenario"]), Text(_effects(r), style=style or ""),
                      Text(str(r["calls"])), Text(_recovered(r)), Text(_told(r)))
    console.print(table)
    counted = {(r.tool, r.counted) for r in rows if r.effects is not None}
    for tool, how in sorted(counted):
        console.print(Text(f"{tool}: effects counted by {how}"))
    for note in sorted({f"{r.tool} {r.scenario}: {r.note}" for r in rows if r.note}):
        console.print(Text(note))
    s = summary(rows)
    if s["did_nothing_checked"]:
        console.print(Text(f"ok having done nothing: caught by verify in {s['did_nothing_caught']} of "
                           f"{s['did_nothing_checked']}"))
    console.print(Text(f"double effects: {s['double_effects']} of {s['observed']} observed scenarios",
                       style="bold red" if s["double_effects"] else "bold green"))


def render_html(rows: Sequence[Row], title: str = "toolproof chaos") -> str:
    """One self-contained page: the double-effect rate per tool as a bar chart, then every scenario."""
    s = summary(rows)
    chart = bar_chart("scenarios that took effect at most once, per tool and way through",
                      [(f"{p['tool']} ({p['through']})", 1.0 - float(p["double_effect_rate"] or 0.0))
                       for p in s["per_tool"]], max_value=1)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in
                   ("tool", "through", "scenario", "effects", "calls", "calls to recover", "what the caller was told",
                    "counted by", "note"))
    body = []
    for r in (row.to_dict() for row in rows):
        cells = (r["tool"], r["through"], r["scenario"], _effects(r), r["calls"], _recovered(r), _told(r),
                 r["counted"], r["note"])
        mark = " style='color:#e76f51;font-weight:bold'" if r["double_effect"] else ""
        body.append(f"<tr{mark}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    intro = (f"<h2>Double effects: {s['double_effects']} of {s['observed']} observed scenarios</h2>"
             "<p class='muted'>Effects per logical operation; more than 1 is a double effect.</p>")
    return html_page(title, intro + chart + f"<table><tr>{head}</tr>{''.join(body)}</table>")


def print_checks(checks: Sequence[Check], console: Console, *, title: str) -> None:
    """The conformance table: per tool and check, the verdict, the effects, what the caller was told, why."""
    table = Table("tool", "check", "verdict", "effects", "what the caller was told", "evidence", title=Text(title))
    styles = {"pass": "bold green", "fail": "bold red"}
    for c in checks:
        table.add_row(Text(c.tool), Text(c.check), Text(c.verdict, style=styles.get(c.verdict, "")),
                      Text("-" if c.effects is None else str(c.effects)), Text(" | ".join(c.told)), Text(c.evidence))
    console.print(table)
    failed = sum(c.verdict == "fail" for c in checks)
    passed = sum(c.verdict == "pass" for c in checks)
    console.print(Text(f"conformance: {passed} passed, {failed} failed, {len(checks) - passed - failed} not checked",
                       style="bold red" if failed else "bold green"))
