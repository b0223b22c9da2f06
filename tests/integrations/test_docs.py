"""Every Python block of docs/integrations.md runs as written and prints what its comment says."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from tests._data import REPO_ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (REPO_ROOT / "docs" / "integrations.md").read_text(), flags=re.S)


def _params() -> list[object]:
    """One case per block; blocks that start `toolproof serve` are end-to-end tests."""
    return [pytest.param(code, id=f"block{i}", marks=[pytest.mark.e2e] if '"serve"' in code else [])
            for i, code in enumerate(BLOCKS)]


@pytest.mark.parametrize("code", _params())
def test_block_runs_and_prints_what_it_says(code: str) -> None:
    expected = re.findall(r"print\(.*\)  # (.+)$", code, flags=re.M)
    assert expected, "each block ends by printing something it states"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/integrations.md", "exec"), {"__name__": "docs"})
    shown = expected[-1].replace("...", "").rstrip()
    printed = out.getvalue().strip()
    assert all(piece.strip() in printed for piece in shown.split("  ") if piece.strip()), (printed, shown)


def test_one_block_per_framework() -> None:
    text = "\n".join(BLOCKS)
    for module in ("pydantic_ai", "openai_agents", "langchain", "sdk", "mcp_process_tool_call",
                   "mcp_tool_meta_resolver"):
        assert module in text, module
