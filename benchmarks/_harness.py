"""Shared timing helpers and the ratio table every benchmark prints.

Times are medians of several repeats of a tight loop (µs per call); what the README quotes are ratios to a
baseline measured in the same run, which survive a slower or busier machine better than absolute times.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rich.console import Console
from rich.table import Table

Row = dict[str, Any]


def per_call_us(fn: Callable[[], Any], *, number: int, repeat: int = 5) -> float:
    """Median µs per call of `fn` over `repeat` runs of `number` calls (after one warm-up run)."""
    for _ in range(min(number, 1000)):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(samples)


def machine() -> str:
    import os

    python = f"{platform.python_implementation()} {platform.python_version()}"
    return f"{python}, {os.cpu_count()} cores, {platform.machine()}"


def print_rows(title: str, rows: list[Row], console: Console | None = None) -> None:
    console = console or Console(width=160)
    table = Table(title=title, title_justify="left")
    for column in ("benchmark", "case", "value", "unit", "baseline", "ratio", "note"):
        table.add_column(column, justify="right" if column in ("value", "ratio") else "left")
    for row in rows:
        value = row.get("value")
        ratio = row.get("ratio")
        table.add_row(
            str(row.get("benchmark", "")),
            str(row.get("case", "")),
            f"{value:,.2f}" if isinstance(value, float) else str(value),
            str(row.get("unit", "")),
            str(row.get("baseline", "") or ""),
            f"{ratio:.2f}x" if isinstance(ratio, float) else "",
            str(row.get("note", "") or ""),
        )
    console.print(table)


@dataclass(frozen=True, slots=True)
class Target:
    """A speed target: a benchmark row carrying `"target": key` and `"measured": value` is judged by it."""

    key: str
    goal: str
    limit: float | None  # None: reported, no limit
    wanted: str  # the limit as printed
    at_least: bool = False  # met when measured >= limit (else measured <= limit)
    unit: str = "x"
    #: What was measured and tried when the target is missed, printed beside a "not met" so the reason
    #: travels with the number (the docs page named holds the whole account).
    if_missed: str = ""

    def met(self, measured: float) -> bool | None:
        if self.limit is None:
            return None
        return measured >= self.limit if self.at_least else measured <= self.limit


#: The speed targets every full run reports, in the order printed.
_GATEWAY_MISSED = ("toolproof's own share is the pipeline (an async tool with a timeout runs in a bounded task), "
                   "the MCP server glue and the SDK serialising one more hop; see docs/mcp.md")
TARGETS: Final = (
    Target("async-def", "awaited `async def` tool vs call_sync of the same read", 2.0, "<= 2x",
           if_missed="the awaited path builds the same call state and adds the event loop's task; "
                     "see docs/orchestration.md"),
    Target("async-sync", "awaited sync tool over the bare asyncio.to_thread hop", 15.0, "<= +15 µs", unit="µs",
           if_missed="one hop per call; the pipeline's own async work (the async def row) is most of the "
                     "limit, and a thread's wake-up moves by tens of µs between runs; see docs/orchestration.md"),
    Target("gateway-p50", "gateway vs the SDK's bare pass-through proxy, p50", 1.05, "<= 1.05x",
           if_missed=_GATEWAY_MISSED),
    Target("gateway-p95", "gateway vs the SDK's bare pass-through proxy, p95", 1.05, "<= 1.05x",
           if_missed=_GATEWAY_MISSED),
    Target("lint-10k", "lint of 10,000 definitions, every default rule", 1.0, "< 1 s", unit="s",
           if_missed="the rules' own work is above the target, and the cyclic collector adds about a "
                     "third; see docs/lint.md"),
    Target("scoring", "BFCL scoring vs the reference checker, 10,000 calls", 2.0, ">= 2x", at_least=True,
           if_missed="see docs/evals.md"),
    Target("sqlite-share", "SQLite (synchronous=NORMAL): guarded write rate / journal-alone rate", None, "reported"),
)


def targeted(row: Row, key: str, measured: float) -> Row:
    """`row` marked as measuring target `key`."""
    if key not in {t.key for t in TARGETS}:
        raise ValueError(f"no target {key!r}")
    return {**row, "target": key, "measured": measured}


def target_summary(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """One line per target: what was measured (the last row for it) and whether it is met."""
    found = {r["target"]: r for r in rows if r.get("target")}
    out = []
    for t in TARGETS:
        row = found.get(t.key)
        measured = row.get("measured") if row else None
        if isinstance(measured, int | float):
            measured = float(measured)
            met = t.met(measured)
            verdict = "reported" if met is None else "met" if met else "not met"
        else:
            verdict = str(row.get("note") or "not measured") if row else "not measured"
            measured = None
        why = t.if_missed if verdict == "not met" else ""
        out.append({"target": t.goal, "wanted": t.wanted, "measured": measured, "unit": t.unit, "verdict": verdict,
                    "why": why})
    return out


def print_targets(rows: Sequence[Row], console: Console | None = None) -> None:
    console = console or Console(width=160)
    table = Table(title="targets", title_justify="left")
    for column in ("target", "wanted", "measured", "met", "why not"):
        table.add_column(column, justify="right" if column == "measured" else "left")
    for line in target_summary(rows):
        measured = line["measured"]
        shown = f"{measured:,.3f} {line['unit']}" if isinstance(measured, float) else "-"
        table.add_row(line["target"], line["wanted"], shown, line["verdict"], line["why"])
    console.print(table)
