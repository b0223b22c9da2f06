"""Commands that only read (or reconcile what exists) never create a store: a missing file, folder, database or
set of tables is an error naming it, exit 2. Real subprocesses, a real PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.cli._run import fill, json_lines, toolproof_cli
from tests.pg_support import drop_schema, postgres_server, unique_schema, with_schema

READERS = (["journal", "list"], ["journal", "show", "k"], ["journal", "prune"],
           ["journal", "resolve", "k", "--done"], ["stops", "list"], ["stops", "show", "s"],
           ["stops", "resolve", "s", "--note", "x"], ["audit", "tail"], ["audit", "export"], ["audit", "fields"])


@pytest.fixture(scope="module")
def pg_dsn() -> Iterator[str]:
    with postgres_server() as dsn:
        yield dsn


@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a[:2]))
def test_a_missing_sqlite_file_is_named_and_nothing_is_created(args: list[str], tmp_path: Path) -> None:
    path = tmp_path / "nonexist" / "dir" / "x.sqlite3"
    proc = toolproof_cli(*args, "--store", f"sqlite:///{path}", code=2)
    assert str(path) in proc.stderr and "does not exist" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_default_store_is_not_created_in_an_empty_folder(tmp_path: Path) -> None:
    for args in READERS:
        proc = toolproof_cli(*args, cwd=tmp_path, code=2)
        assert ".toolproof/toolproof.sqlite3" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_file_without_toolproof_tables_is_refused_and_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE orders (id INTEGER)")
    before = other.read_bytes()
    proc = toolproof_cli("stops", "list", "--store", f"sqlite:///{other}", code=2)
    assert str(other) in proc.stderr and "no toolproof tables" in proc.stderr
    assert other.read_bytes() == before
    (tmp_path / "notes.txt").write_text("not a database")
    toolproof_cli("audit", "tail", "--store", f"sqlite:///{tmp_path / 'notes.txt'}", code=2)


def test_an_existing_store_is_read(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ok.sqlite3'}"
    fill(url)
    assert len(json_lines(toolproof_cli("stops", "list", "--json", "-s", url).stdout)) == 2


def test_a_missing_postgres_database_is_named_with_its_password_masked(pg_dsn: str) -> None:
    parts = urlsplit(pg_dsn)
    netloc = f"{parts.username}:hunter2@{parts.hostname}:{parts.port}"
    missing = urlunsplit(parts._replace(netloc=netloc, path="/toolproof_no_such_db"))
    proc = toolproof_cli("journal", "list", "--store", missing, code=2)
    assert "toolproof_no_such_db" in proc.stderr and "does not exist" in proc.stderr
    assert "hunter2" not in proc.stderr


def test_a_postgres_schema_without_tables_is_refused_and_not_created(pg_dsn: str) -> None:
    import psycopg

    schema = unique_schema("tp_cli_ro")
    proc = toolproof_cli("stops", "list", "--store", with_schema(pg_dsn, schema), code=2)
    assert schema in proc.stderr and "no toolproof tables" in proc.stderr
    with psycopg.connect(pg_dsn) as conn:
        found = conn.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,))
        assert found.fetchone() is None
    url = with_schema(pg_dsn, schema)
    try:
        fill(url)
        assert len(json_lines(toolproof_cli("journal", "list", "--json", "-s", url).stdout)) == 2
    finally:
        drop_schema(pg_dsn, schema)
