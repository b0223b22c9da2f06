"""Locating the shared public corpora (beside the repository, as in CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# `shared/` sits beside the repository (CI); a git worktree is one level deeper.
CORPORA = next((p / "shared" / "corpora" for p in REPO_ROOT.parents if (p / "shared" / "corpora").is_dir()),
               REPO_ROOT.parent / "shared" / "corpora")


@pytest.fixture(scope="session")
def corpora() -> Path:
    assert (CORPORA / "retrieval").is_dir(), f"the shared corpora must sit beside the repository: {CORPORA}"
    return CORPORA
