"""`toolproof bench`: run the benchmarks of a toolproof source checkout and print one ratio table.

The benchmarks are not shipped in the package: they measure against dev-only baselines (tenacity, pybreaker,
jsonschema, an MCP server, BFCL's checker) on the test corpora, which a checkout has and an install does not.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import typer

from ._options import OutOpt, console, fail, say

NEEDS_CHECKOUT = ("needs a toolproof source checkout (git clone the repository; `make bench` there): the "
                  "benchmarks/ folder is not part of the installed package")


def _checkout() -> Path | None:
    """The checkout whose benchmarks run: the current folder or one above it, else the one this toolproof was
    imported from (an editable install)."""
    here = Path.cwd()
    installed_from = Path(__file__).resolve().parents[3]
    for root in (here, *here.parents, installed_from):
        project = root / "pyproject.toml"
        if (root / "benchmarks" / "__main__.py").is_file() and project.is_file() \
                and 'name = "toolproof"' in project.read_text(encoding="utf-8", errors="replace"):
            return root
    return None


def bench_cmd(
    quick: bool = typer.Option(False, "--quick", help="Fewer iterations, for a short run."),
    only: list[str] = typer.Option([], "--only", help="Run benchmarks whose name contains this (repeatable)."),
    out: OutOpt = None,
) -> None:
    """Run every benchmark in a source checkout's benchmarks/ against its same-run baseline and print the
    ratios. Needs a checkout (git clone; `make bench` there): the benchmarks are not in the installed package."""
    root = _checkout()
    if root is None:
        raise fail(f"toolproof bench {NEEDS_CHECKOUT}; none found at or above {Path.cwd()}")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        runner = importlib.import_module("benchmarks.__main__")
    except ImportError as exc:
        raise fail(f"cannot import the benchmarks of {root}: {exc}. They need the dev tools: "
                   "`pip install -e '.[dev]'` in the checkout, or `make bench`.") from None
    results = runner.run_all(quick=quick, only=only or None, console=console)
    if out is not None:
        out.write_text(json.dumps(results, indent=2, default=str))
        say(f"wrote the results to {out}", stderr=True)
    if any(b["error"] for b in results["benchmarks"].values()):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("bench")(bench_cmd)
