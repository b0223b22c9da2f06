"""Real PostgreSQL for the end-to-end tests (see tests/pg_support.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pg_support import postgres_server


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    with postgres_server() as dsn:
        yield dsn
