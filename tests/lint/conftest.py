from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# `shared/` sits beside the repository (CI, /work/main); a git worktree one level deeper looks one level up.
CORPORA = next((p for p in (REPO_ROOT.parent / "shared" / "corpora", REPO_ROOT.parent.parent / "shared" / "corpora")
                if p.is_dir()), REPO_ROOT.parent / "shared" / "corpora")
LABELS = REPO_ROOT / "tests" / "data" / "lint_labels.jsonl"


def corpus_files() -> list[Path]:
    """Every MCP corpus file and every BFCL file that holds function definitions."""
    mcp = sorted((CORPORA / "mcp_tools").glob("*.jsonl"))
    bfcl = [p for p in sorted((CORPORA / "bfcl" / "v4").glob("BFCL_v4_*.json"))
            if '"function": [' in p.read_text(encoding="utf-8")[:200_000]]
    return mcp + bfcl
