"""Locating the shared public corpora (beside the repository, as in CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPORA = REPO_ROOT.parent / "shared" / "corpora"


@pytest.fixture(scope="session")
def corpora() -> Path:
    assert (CORPORA / "retrieval").is_dir(), f"the shared corpora must sit beside the repository: {CORPORA}"
    return CORPORA
