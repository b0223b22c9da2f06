"""Shared fixtures: every test isolated from the user's settings and working directory; the wholesaler example on
a real SQLite file, a fixed 'today'; the `e2e` marker on everything under tests/e2e."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

import toolproof
from toolproof.examples.wholesaler import Shop, build_toolset

TODAY = date(2026, 10, 19)
E2E_DIR = Path(__file__).parent / "e2e"

#: Variables the tests themselves read (where the test servers are), kept; every other TOOLPROOF_* setting of the
#: user's (TOOLPROOF_STORE above all) would change what toolproof does, or where it writes, under the tests.
KEPT_PREFIXES = ("TOOLPROOF_TEST_",)
_SET_ASIDE = pytest.StashKey[dict[str, str]]()


def _user_settings() -> list[str]:
    return [n for n in os.environ if n.startswith("TOOLPROOF_") and not n.startswith(KEPT_PREFIXES)]


def pytest_configure(config: pytest.Config) -> None:
    """Before collection (test modules build runners at import): set aside the user's TOOLPROOF_* settings,
    and keep Hypothesis's example database out of the working tree (in the temporary folder, across runs)."""
    config.stash[_SET_ASIDE] = {name: os.environ.pop(name) for name in _user_settings()}
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "toolproof-tests" / "hypothesis")


def pytest_unconfigure(config: pytest.Config) -> None:
    os.environ.update(config.stash.get(_SET_ASIDE, {}))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/e2e starts real servers or subprocesses: `pytest -m "not e2e"` leaves it out."""
    for item in items:
        if item.path.is_relative_to(E2E_DIR):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test starts with no TOOLPROOF_* setting (one a previous test left behind is removed for it) and in
    a scratch working directory: whatever it writes by default (the CLI's .toolproof/ store, a relative path)
    lands there, never in the repository. Subprocesses inherit both."""
    for name in _user_settings():
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Shop]:
    s = Shop(tmp_path / "orders.sqlite3", today=lambda: TODAY)
    yield s
    s.close()


@pytest.fixture
def wholesaler(shop: Shop) -> toolproof.Toolset:
    return build_toolset(shop)


@pytest.fixture
def runner(wholesaler: toolproof.Toolset) -> Iterator[toolproof.Runner]:
    with toolproof.Runner(wholesaler) as r:
        yield r


@pytest.fixture
def buyer() -> toolproof.CallContext:
    return toolproof.CallContext(conversation_id="chat-8812", principal="B-17")
