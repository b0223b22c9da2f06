"""The approval gate against the three real stores (memory, a SQLite file, PostgreSQL in its own schema)."""

from tests.stores.conftest import pg_dsn, store

__all__ = ["pg_dsn", "store"]
