from __future__ import annotations

from pathlib import Path

from tests._data import corpus, data

LABELS = data("lint_labels.jsonl")


def corpus_files() -> list[Path]:
    """Every MCP corpus file and every BFCL file that holds function definitions."""
    mcp = sorted(corpus("mcp_tools").glob("*.jsonl"))
    bfcl = [p for p in sorted(corpus("bfcl", "v4").glob("BFCL_v4_*.json"))
            if '"function": [' in p.read_text(encoding="utf-8")[:200_000]]
    return mcp + bfcl
