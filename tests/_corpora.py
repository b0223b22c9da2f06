"""Where the shared public corpora live: `shared/corpora` beside the repository (as laid out for CI)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPORA = REPO_ROOT.parent / "shared" / "corpora"


def corpus(*parts: str) -> Path:
    path = CORPORA.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"shared corpus missing: {path} (expected shared/ beside the repository)")
    return path
