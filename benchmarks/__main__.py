"""`python -m benchmarks [--quick] [--only NAME] [--json FILE]`: every benchmark, one table of ratios."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pkgutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks._harness import Row, machine, print_rows, print_targets, target_summary


def discover() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))


def _run_isolated(name: str, quick: bool) -> tuple[list[Row], str | None]:
    """One benchmark in a fresh interpreter: the heaps, threads and pools of the others cannot slow it."""
    code = (
        "import json, sys; from benchmarks import " + name + " as m; "
        "sys.stdout.write('\\n@@rows@@' + json.dumps(m.run(quick=" + str(quick) + "), default=str))"
    )
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, env=env)
    if proc.returncode != 0 or "@@rows@@" not in proc.stdout:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return [], f"exit {proc.returncode}: {tail}"
    return json.loads(proc.stdout.rsplit("@@rows@@", 1)[1]), None


def run_all(*, quick: bool, only: list[str] | None = None, console: Console | None = None) -> dict[str, Any]:
    console = console or Console(width=160)
    results: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "quick": quick,
        "benchmarks": {},
    }
    names = [n for n in discover() if not only or any(o in n for o in only)]
    all_rows: list[Row] = []
    with console.status("") as status:
        for name in names:
            status.update(f"running {name} ...")
            start = time.perf_counter()
            rows, error = _run_isolated(name, quick)
            elapsed = time.perf_counter() - start
            results["benchmarks"][name] = {"rows": rows, "seconds": round(elapsed, 2), "error": error}
            all_rows.extend(rows)
            if error:
                console.print(f"[red]{name} failed:[/] {error}")
    print_rows(f"toolproof benchmarks, {results['date']}, {results['machine']}", all_rows, console)
    print_targets(all_rows, console)
    results["targets"] = target_summary(all_rows)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--only", action="append", help="run benchmarks whose name contains this")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    args = parser.parse_args(argv)
    results = run_all(quick=args.quick, only=args.only)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 1 if any(b["error"] for b in results["benchmarks"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
