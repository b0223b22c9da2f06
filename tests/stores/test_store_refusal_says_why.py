"""A write refused because its store is away says what happened, in the envelope and in the stop record: which
store (the URL through the one redaction), the cause (connection refused, timeout, locked) and how long the
claim waited. The real PostgreSQL server behind a real TCP relay that is closed, then a port that accepts TCP
but never answers, and a real SQLite file locked by a second connection."""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

import toolproof
from tests.pg_support import drop_schema, unique_schema, with_schema
from tests.stores.test_postgres_pools import Relay, _toolset
from toolproof import CallContext
from toolproof.stores import SqliteStore, Store
from toolproof.stores._records import StopRecord

PASSWORD = "pw-7f3a9c1e55d2"  # the test server trusts local connections: a password is accepted, never used


def _refused_write(store: str | Store, outage: Callable[[], Any]) -> tuple[toolproof.Envelope, list[StopRecord]]:
    """A runner opened while its store is up; then `outage()`; then one write (one claim attempt)."""
    stops: list[StopRecord] = []

    def hook(record: Any) -> None:
        if isinstance(record, StopRecord):
            stops.append(record)

    runner = toolproof.Runner(_toolset(), store=store, retry=toolproof.RetryPolicy(max_attempts=1), hooks=[hook])
    try:  # one write first: every pool connection is open before the outage (none half-made through it)
        assert runner.call_sync("place_order", {"sku": "A"}, context=CallContext(conversation_id="c1")).ok
        with outage():
            envelope = runner.call_sync("place_order", {"sku": "B"}, context=CallContext(conversation_id="c2"))
    finally:
        runner.close()
    return envelope, stops


def _pg_url(pg_dsn: str, port: int, schema: str) -> str:
    dbname = psycopg.conninfo.conninfo_to_dict(pg_dsn).get("dbname", "test")
    return with_schema(f"postgresql://postgres:{PASSWORD}@127.0.0.1:{port}/{dbname}?timeout_s=1", schema)


class _Refused:
    def __init__(self, relay: Relay) -> None:
        self.relay = relay

    def __enter__(self) -> None:
        self.relay.refuse()

    def __exit__(self, *_: Any) -> None:
        pass


class _Silent:
    """The relay's port taken over by a listener that never accepts: TCP connects, the server never speaks."""

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self.listener: socket.socket | None = None

    def __enter__(self) -> None:
        self.relay.refuse()
        self.listener = socket.create_server(("127.0.0.1", self.relay.port))

    def __exit__(self, *_: Any) -> None:
        assert self.listener is not None
        self.listener.close()


def _check(envelope: toolproof.Envelope, stops: list[StopRecord], phrase: str, cause: str) -> None:
    error = envelope.error
    assert error is not None and error.code == "JOURNAL_UNAVAILABLE", envelope.to_dict()
    assert phrase in error.message and "was not sent" in error.message, error.message
    assert error.state is not None and error.state["cause"] == cause
    assert 0.4 <= error.state["waited_s"] < 10, error.state
    assert [s.message for s in stops] == [error.message] and stops[0].effect_status == "not_done"


def test_refused_connections_say_refused_for_how_long_at_which_url(pg_dsn: str) -> None:
    schema = unique_schema()
    relay = Relay(int(psycopg.conninfo.conninfo_to_dict(pg_dsn).get("port") or 5432))
    try:
        envelope, stops = _refused_write(_pg_url(pg_dsn, relay.port, schema), lambda: _Refused(relay))
    finally:
        drop_schema(pg_dsn, schema)
    _check(envelope, stops, "connections refused for 1.", "connection refused")
    assert f"at postgresql://[REDACTED]@127.0.0.1:{relay.port}/" in envelope.error.message  # type: ignore[union-attr]
    assert PASSWORD not in envelope.to_json() and PASSWORD not in repr(stops)


def test_a_server_that_never_answers_is_a_timeout(pg_dsn: str) -> None:
    schema = unique_schema()
    relay = Relay(int(psycopg.conninfo.conninfo_to_dict(pg_dsn).get("port") or 5432))
    try:
        envelope, stops = _refused_write(_pg_url(pg_dsn, relay.port, schema), lambda: _Silent(relay))
    finally:
        drop_schema(pg_dsn, schema)
    _check(envelope, stops, "no connection within 1.", "timeout")
    assert PASSWORD not in envelope.to_json()


class _Locked:
    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    def __enter__(self) -> None:
        self.db.execute("BEGIN EXCLUSIVE")

    def __exit__(self, *_: Any) -> None:
        self.db.rollback()
        self.db.close()


def test_a_locked_sqlite_file_says_locked_and_for_how_long(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    envelope, stops = _refused_write(SqliteStore(path, busy_timeout_s=0.5), lambda: _Locked(path))
    _check(envelope, stops, f"the database at sqlite:///{path}", "locked")
    assert "stayed locked for 0." in envelope.error.message  # type: ignore[union-attr]


async def test_the_async_path_says_refused_too(pg_dsn: str) -> None:
    schema = unique_schema()
    relay = Relay(int(psycopg.conninfo.conninfo_to_dict(pg_dsn).get("port") or 5432))
    runner = toolproof.Runner(_toolset(), store=_pg_url(pg_dsn, relay.port, schema),
                              retry=toolproof.RetryPolicy(max_attempts=1))
    try:
        assert (await runner.call("place_order", {"sku": "A"}, context=CallContext(conversation_id="c1"))).ok
        relay.refuse()
        envelope = await runner.call("place_order", {"sku": "B"}, context=CallContext(conversation_id="c2"))
    finally:
        await runner.aclose()
        drop_schema(pg_dsn, schema)
    assert envelope.error is not None and envelope.error.state is not None
    assert envelope.error.state["cause"] == "connection refused", envelope.error.message
    assert "connections refused for 1." in envelope.error.message and PASSWORD not in envelope.to_json()
