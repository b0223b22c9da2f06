"""The findings of every corpus we have, reduced to a digest per corpus, to tell a faster lint from a different one.

`tests/data/lint_findings_golden.json` holds, for each corpus and configuration, the number of findings, their
count by code and the SHA-256 of the ordered findings as JSON. It was written by the lint of main d8dae2c (before
the look-alike and text passes were made faster) with

    PYTHONPATH=src:. python -m tests.lint.golden_findings --write

A rule change that means to change findings regenerates it the same way and says so in its commit.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from tests._data import CORPORA, DATA, REPO_ROOT
from toolproof.lint import Finding, LintConfig, from_definitions, from_toolset, lint_tooldefs, load_file
from toolproof.lint._model import ToolDef

from . import stabletoolbench_toolsets, tooluniverse_toolsets
from .conftest import corpus_files

GOLDEN = DATA / "lint_findings_golden.json"
CONFIGS = {"default": LintConfig(), "all": LintConfig(select=("ALL",))}
CATALOGUE_SIZE = 10_000


def _examples() -> list[ToolDef]:
    from toolproof.examples.wholesaler import toolset
    from toolproof.examples.wholesaler.old_tools import old_toolset

    versions = REPO_ROOT / "src" / "toolproof" / "examples" / "versions"
    return [*from_toolset(toolset, "new"), *from_toolset(old_toolset, "old"),
            *(t for p in sorted(versions.glob("*.json")) for t in load_file(p))]


def _catalogue() -> list[ToolDef]:
    from benchmarks.bench_lint import make_definitions

    return from_definitions({"tools": make_definitions(CATALOGUE_SIZE)}, source="bench")


def _one_file(path: Path) -> list[list[ToolDef]]:
    return [load_file(path)]


def corpora() -> Iterator[tuple[str, Callable[[], list[list[ToolDef]]]]]:
    """(name, the runs of one lint each): every file alone and all files in one run (names across sources)."""
    files = corpus_files()
    for path in files:
        yield path.relative_to(CORPORA).as_posix(), partial(_one_file, path)
    yield "all corpus files in one run", lambda: [[t for p in files for t in load_file(p)]]
    yield "stabletoolbench toolsets", lambda: list(stabletoolbench_toolsets.toolsets().values())
    yield "tooluniverse toolsets", lambda: list(tooluniverse_toolsets.toolsets().values())
    yield "examples", lambda: [_examples()]
    yield f"generated catalogue of {CATALOGUE_SIZE:,}", lambda: [_catalogue()]


def summary(findings: list[Finding]) -> dict[str, Any]:
    text = json.dumps([f.to_dict() for f in findings], ensure_ascii=False, sort_keys=True)
    text = text.replace(str(REPO_ROOT), "<checkout>")  # a finding names its file: the digest is the checkout's
    return {"findings": len(findings), "by_code": dict(sorted(Counter(f.code for f in findings).items())),
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}


def measure() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, runs in corpora():
        toolsets = runs()
        for label, config in CONFIGS.items():
            out[f"{name} [{label}]"] = summary([f for tools in toolsets for f in lint_tooldefs(tools, config)])
    return out


if __name__ == "__main__":
    result = measure()
    if "--write" in sys.argv:
        GOLDEN.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v["findings"] for k, v in result.items()}, indent=1))
