"""Render the measured numbers into README.md and docs/ from one `toolproof bench --out FILE` run.

The run lives in docs/bench/latest.json; every table of measured numbers in the Markdown sits between

    <!-- bench:begin [BENCHMARK ...] -->
    ...generated...
    <!-- bench:end -->

(BENCHMARK: the `benchmarks/` modules whose rows the table shows, e.g. `bench_journal`; none: every row;
`targets`: the run's speed targets, each with its measure, met / not met, and why where it is missed).
The README and docs quote the same run, with its date, and tests/test_docs.py checks that the regions match
what this script renders from the file, so a number cannot drift from its source.

    toolproof bench --out docs/bench/latest.json      # measure (minutes)
    python scripts/render_bench.py                      # rewrite the regions
    python scripts/render_bench.py --check              # exit 1 when a region is stale
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
LATEST = REPO_ROOT / "docs" / "bench" / "latest.json"
REGION = re.compile(r"(<!-- bench:begin(?P<only>[^>]*?)-->\n)(?P<body>.*?)(<!-- bench:end -->)", re.S)


def documents(root: Path = REPO_ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return str(value)


def _cell(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def render(results: Mapping[str, Any], only: Sequence[str] = ()) -> str:
    """One Markdown table of the run's rows (those of `only`, else all), under a line naming the run."""
    names = [n for n in results["benchmarks"] if not only or n in only]
    lines = [f"Run of {results['date']} on {results['machine']}{' (quick)' if results.get('quick') else ''}: "
             "`docs/bench/latest.json`.", "",
             "| benchmark | case | value | baseline (same run) | ratio | note |", "|---|---|---|---|---|---|"]
    for name in names:
        bench = results["benchmarks"][name]
        if bench.get("error"):
            lines.append(f"| {name} | failed in this run: {_cell(bench['error'])} | | | | |")
        for row in bench["rows"]:
            value = f"{_number(row.get('value'))} {row.get('unit') or ''}".strip()
            ratio = row.get("ratio")
            lines.append(f"| {_cell(row.get('benchmark', name))} | {_cell(row.get('case'))} | {_cell(value)} | "
                         f"{_cell(_number(row.get('baseline')))} | "
                         f"{f'{ratio:.2f}x' if isinstance(ratio, float) else _cell(ratio)} | "
                         f"{_cell(row.get('note'))} |")
    return "\n".join(lines) + "\n"


def render_targets(results: Mapping[str, Any]) -> str:
    """The run's targets as one Markdown table (a run without them, e.g. a quick one, says so)."""
    targets = results.get("targets") or []
    lines = [f"Targets of the run of {results['date']}{' (quick)' if results.get('quick') else ''}:", ""]
    if not targets:
        return "\n".join([*lines, "this run measured no targets (`toolproof bench` without `--quick`)."]) + "\n"
    lines += ["| target | wanted | measured | met | why not |", "|---|---|---|---|---|"]
    for t in targets:
        measured = t.get("measured")
        shown = f"{_number(measured)} {t.get('unit', '')}".strip() if isinstance(measured, int | float) else "-"
        lines.append(f"| {_cell(t['target'])} | {_cell(t['wanted'])} | {_cell(shown)} | {_cell(t['verdict'])} | "
                     f"{_cell(t.get('why', ''))} |")
    return "\n".join(lines) + "\n"


def update(text: str, results: Mapping[str, Any]) -> str:
    """`text` with every bench region rendered afresh from `results`."""
    def fill(m: re.Match[str]) -> str:
        only = m.group("only").split()
        body = render_targets(results) if only == ["targets"] else render(results, only)
        return m.group(1) + body + m.group(4)

    return REGION.sub(fill, text)


def main(argv: Sequence[str]) -> int:
    results = json.loads(LATEST.read_text(encoding="utf-8"))
    stale = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        fresh = update(text, results)
        if fresh != text:
            stale.append(path)
            if "--check" not in argv:
                path.write_text(fresh, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if '--check' in argv else 'rendered'}: {path.relative_to(REPO_ROOT)}")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
