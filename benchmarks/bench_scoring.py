"""Scoring 10,000 recorded calls: toolproof's argument scorer against BFCL's own `ast_checker` on the same
calls (BFCL v4 ground truths and their systematic perturbations, every AST category), in the same run.

Also: the wholesaler demo's offline evals (selection old vs new, recovery new), end to end from the files.

    PYTHONPATH=src:. python benchmarks/bench_scoring.py [--quick]
"""

from __future__ import annotations

import itertools
import sys
import time
from typing import Any

from benchmarks._harness import targeted
from toolproof.evals import _bfcl as bfcl
from toolproof.evals._reference import ReferenceChecker, load_reference_checker

NOT_INSTALLED = "reference not installed (pip install --no-deps bfcl-eval==2026.3.23)"


def reference_checker() -> ReferenceChecker | None:
    """BFCL's own checker, or None when `bfcl_eval` cannot be imported: the benchmark then says so and
    measures toolproof's side alone."""
    try:
        return load_reference_checker()
    except ImportError:
        return None


def _calls(n: int) -> list[tuple[bfcl.BfclEntry, list[bfcl.ToolCall]]]:
    pools = []
    for category in bfcl.AST_CATEGORIES:
        pool = []
        for entry in bfcl.load_category(category):
            pool.append((entry, bfcl.canonical_calls(entry)))
            pool.extend((entry, list(p.calls)) for p in bfcl.perturbations(entry))
        pools.append(pool)
    mixed = [item for group in itertools.zip_longest(*pools) for item in group if item is not None]
    return mixed[:n]


def _time(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(quick: bool) -> list[dict[str, Any]]:
    n = 2_000 if quick else 10_000
    repeat = 1 if quick else 3
    calls = _calls(n)
    reference = reference_checker()
    ours = _time(lambda: [bfcl.score_entry(e, c).ok for e, c in calls], repeat)
    case = f"{len(calls):,} BFCL calls, toolproof vs bfcl ast_checker"
    if reference is None:
        missing = {"benchmark": "scoring", "case": case, "value": round(ours, 4), "unit": "s",
                   "baseline": NOT_INSTALLED, "ratio": None, "note": NOT_INSTALLED}
        return [missing if quick else {**missing, "target": "scoring"}, _demo_row(repeat)]
    theirs = _time(lambda: [reference(e, c) for e, c in calls], repeat)
    agree = sum(bfcl.score_entry(e, c).ok == reference(e, c) for e, c in calls)
    versus = {"benchmark": "scoring", "case": case, "value": round(ours, 4), "unit": "s",
              "baseline": round(theirs, 4), "ratio": round(theirs / ours, 2)}
    return [
        versus if quick else targeted(versus, "scoring", theirs / ours),
        {"benchmark": "scoring", "case": "calls per second (toolproof)", "value": round(len(calls) / ours),
         "unit": "calls/s", "baseline": round(len(calls) / theirs), "ratio": round(theirs / ours, 2)},
        {"benchmark": "scoring", "case": "verdicts equal to bfcl's", "value": agree, "unit": "calls",
         "baseline": len(calls), "ratio": round(agree / len(calls), 4)},
        _demo_row(repeat),
    ]


def _demo_row(repeat: int) -> dict[str, Any]:
    from toolproof.evals import ReplayModel, load_cases, run_recovery, run_selection
    from toolproof.examples.wholesaler.cases import (
        RECORDED,
        RECORDED_RECOVERY,
        SELECTION_CASES,
        new_toolset,
        old_toolset,
    )
    from toolproof.examples.wholesaler.cases.library import FAILURES

    def demo() -> None:
        cases = load_cases(SELECTION_CASES)
        run_selection(cases, old_toolset(), ReplayModel.load(RECORDED["old"]), label="old")
        run_selection(cases, new_toolset(), ReplayModel.load(RECORDED["new"]), label="new")
        run_recovery(FAILURES, new_toolset(), ReplayModel.load(RECORDED_RECOVERY["new"]))

    def load_only() -> None:
        load_cases(SELECTION_CASES)
        old_toolset()
        new_toolset()

    full, base = _time(demo, repeat), _time(load_only, repeat)
    return {"benchmark": "scoring", "case": "demo: selection old+new (240 runs) + recovery (35), vs loading only",
            "value": round(full, 4), "unit": "s", "baseline": round(base, 4), "ratio": round(full / base, 2)}


if __name__ == "__main__":
    from rich.console import Console
    from rich.table import Table

    table = Table(title="bench_scoring")
    for col in ("case", "value", "unit", "baseline", "ratio"):
        table.add_column(col)
    for row in run("--quick" in sys.argv):
        table.add_row(row["case"], str(row["value"]), row["unit"], str(row["baseline"]), str(row["ratio"]))
    Console().print(table)
