"""Store URLs, TOOLPROOF_STORE, versioned migrations, and the in-memory default writing no file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolproof
from tests.pg_support import drop_schema, unique_schema, with_schema
from toolproof.stores import MemoryStore, PostgresStore, SqliteStore, open_store
from toolproof.stores._sql import MIGRATIONS, SCHEMA_VERSION


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


def test_default_is_memory_and_writes_no_file(in_tmp: Path, monkeypatch: pytest.MonkeyPatch, buyer: Any) -> None:
    monkeypatch.delenv("TOOLPROOF_STORE", raising=False)
    from toolproof.examples.wholesaler import Shop, build_toolset

    runner = toolproof.Runner(build_toolset(Shop(":memory:")))
    assert isinstance(runner.store, MemoryStore)
    order = {"crop": "onion", "quantity_kg": 40, "delivery_date": "2099-01-01"}
    assert runner.call_sync("place_order", order, context=buyer).ok
    assert runner.call_sync("place_order", order, context=buyer).meta.replayed  # exactly-once, in memory
    assert list(in_tmp.iterdir()) == []


def test_sqlite_urls(in_tmp: Path) -> None:
    rel = open_store("sqlite:///rel.sqlite3")
    assert isinstance(rel, SqliteStore) and (in_tmp / "rel.sqlite3").exists() and rel.synchronous == "FULL"
    rel.close()
    absolute = in_tmp / "sub" / "abs.sqlite3"
    store = open_store(f"sqlite:///{absolute}?synchronous=normal&finish_synchronous=FULL")
    assert isinstance(store, SqliteStore) and absolute.exists()
    assert store.synchronous == "NORMAL" and store.finish_synchronous == "FULL"
    store.close()


@pytest.mark.parametrize("url", ["sqlite://host/x.db", "sqlite:///", "sqlite:///x.db?fsync=1",
                                 "sqlite:///x.db?synchronous=MAYBE", "redis://localhost",
                                 "postgresql://h/db?schema=Bad-Name", "nonsense"])
def test_bad_urls_are_clear_errors(url: str, in_tmp: Path) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        open_store(url)


def test_store_from_environment(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLPROOF_STORE", "sqlite:///env.sqlite3")
    store = open_store()
    assert isinstance(store, SqliteStore) and store.path == "env.sqlite3"
    store.close()
    monkeypatch.setenv("TOOLPROOF_STORE", "memory://")
    assert isinstance(open_store(), MemoryStore)


def test_sqlite_migrations_run_once(tmp_path: Path) -> None:
    for _ in range(3):
        store = SqliteStore(tmp_path / "m.sqlite3")
        assert store.schema_version() == SCHEMA_VERSION
        _, rows = store._run("SELECT COUNT(*) FROM toolproof_schema")
        assert rows[0][0] == len(MIGRATIONS)  # one row per migration, each applied once
        store.close()


def test_postgres_migrations_run_once_in_their_own_schema(pg_dsn: str) -> None:
    schema = unique_schema("tp_mig")
    try:
        for _ in range(2):
            store = PostgresStore(with_schema(pg_dsn, schema), finish_synchronous_commit="on")
            assert store.schema == schema and store.schema_version() == SCHEMA_VERSION
            _, rows = store._run("SELECT COUNT(*) FROM toolproof_schema")
            assert rows[0][0] == len(MIGRATIONS)  # one row per migration, each applied once
            _, tables = store._run("SELECT table_name FROM information_schema.tables WHERE table_schema = %s"
                                   .replace("%s", "?"), (schema,))
            assert {t[0] for t in tables} >= {"toolproof_intents", "toolproof_audit", "toolproof_stops"}
            store.close()
        with pytest.raises(ValueError, match="finish_synchronous_commit"):
            PostgresStore(with_schema(pg_dsn, schema), finish_synchronous_commit="sometimes")
    finally:
        drop_schema(pg_dsn, schema)


def test_store_url_is_the_one_reader_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolproof.stores import FILE_STORE, store_url

    monkeypatch.delenv("TOOLPROOF_STORE", raising=False)
    assert store_url() == "memory://" and store_url(default=FILE_STORE) == FILE_STORE
    monkeypatch.setenv("TOOLPROOF_STORE", "sqlite:///env.sqlite3")
    assert store_url() == store_url(default=FILE_STORE) == "sqlite:///env.sqlite3"
    assert store_url("memory://") == "memory://"


def test_create_false_opens_only_an_existing_store(tmp_path: Path) -> None:
    from toolproof.stores import StoreNotFound

    missing = tmp_path / "no" / "such" / "x.sqlite3"
    with pytest.raises(StoreNotFound, match=str(missing)):
        open_store(f"sqlite:///{missing}", create=False)
    assert list(tmp_path.iterdir()) == []
    open_store(f"sqlite:///{tmp_path / 'made.sqlite3'}").close()
    again = open_store(f"sqlite:///{tmp_path / 'made.sqlite3'}", create=False)
    assert isinstance(again, SqliteStore) and again.schema_version() == SCHEMA_VERSION
    again.close()


def test_create_false_on_postgres_needs_the_tables(pg_dsn: str) -> None:
    from toolproof.stores import StoreNotFound

    schema = unique_schema("tp_nocreate")
    url = with_schema(pg_dsn, schema)
    with pytest.raises(StoreNotFound, match="no toolproof tables"):
        open_store(url, create=False)
    try:
        open_store(url).close()
        store = open_store(url, create=False)
        assert isinstance(store, PostgresStore) and store.schema_version() == SCHEMA_VERSION
        store.close()
    finally:
        drop_schema(pg_dsn, schema)
