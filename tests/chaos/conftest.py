from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def shop_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shop every process of a test's run opens (the worker processes inherit the variable)."""
    path = tmp_path / "orders.sqlite3"
    monkeypatch.setenv("CHAOS_SHOP", str(path))
    return path
