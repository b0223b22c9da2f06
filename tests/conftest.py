"""Shared fixtures: the wholesaler example on a real SQLite file, a fixed 'today'."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

import toolproof
from toolproof.examples.wholesaler import Shop, build_toolset

TODAY = date(2026, 10, 19)


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Shop]:
    s = Shop(tmp_path / "orders.sqlite3", today=lambda: TODAY)
    yield s
    s.close()


@pytest.fixture
def wholesaler(shop: Shop) -> toolproof.Toolset:
    return build_toolset(shop)


@pytest.fixture
def runner(wholesaler: toolproof.Toolset) -> toolproof.Runner:
    return toolproof.Runner(wholesaler)


@pytest.fixture
def buyer() -> toolproof.CallContext:
    return toolproof.CallContext(conversation_id="chat-8812", principal="B-17")
