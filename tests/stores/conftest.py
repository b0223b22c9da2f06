"""One contract suite, three stores: memory, a real SQLite file, a real PostgreSQL server (own schema per test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg_support import drop_schema, postgres_server, unique_schema, with_schema
from toolproof.stores import MemoryStore, PostgresStore, SqliteStore, Store


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    with postgres_server() as dsn:
        yield dsn


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        s: Store = MemoryStore()
        yield s
        s.close()
    elif request.param == "sqlite":
        s = SqliteStore(tmp_path / "toolproof.sqlite3")
        yield s
        s.close()
    else:
        dsn = request.getfixturevalue("pg_dsn")
        schema = unique_schema()
        s = PostgresStore(with_schema(dsn, schema), max_size=4)
        try:
            yield s
        finally:
            s.close()
            drop_schema(dsn, schema)
