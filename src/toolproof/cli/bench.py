"""`toolproof bench`: run the repository's benchmarks (from a source checkout) and print one ratio table."""

from __future__ import annotations

import importlib
import json
import os
import sys

import typer

from ._options import OutOpt, console, fail, say


def bench_cmd(
    quick: bool = typer.Option(False, "--quick", help="Fewer iterations, for a short run."),
    only: list[str] = typer.Option([], "--only", help="Run benchmarks whose name contains this (repeatable)."),
    out: OutOpt = None,
) -> None:
    """Run every benchmark in benchmarks/ against its same-run baseline and print the ratios."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        runner = importlib.import_module("benchmarks.__main__")
    except ImportError:
        raise fail("no benchmarks/ package here: run `toolproof bench` from the repository root") from None
    results = runner.run_all(quick=quick, only=only or None, console=console)
    if out is not None:
        out.write_text(json.dumps(results, indent=2, default=str))
        say(f"wrote the results to {out}", stderr=True)
    if any(b["error"] for b in results["benchmarks"].values()):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("bench")(bench_cmd)
