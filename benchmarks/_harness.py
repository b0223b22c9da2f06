"""Shared timing helpers and the ratio table every benchmark prints.

Times are medians of several repeats of a tight loop (µs per call); what the README quotes are ratios to a
baseline measured in the same run, which survive a slower or busier machine better than absolute times.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

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
