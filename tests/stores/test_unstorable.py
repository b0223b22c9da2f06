"""Text no database column can hold (NUL, lone surrogates) never stops a store: it is stored as U+FFFD, written and
looked up alike; a record a store still refuses is dropped alone by the audit writer, and the rest flows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import toolproof
from tests.cli._run import toolproof_cli
from tests.pg_support import drop_schema, unique_schema, with_schema
from toolproof.audit._trail import AuditEntry, AuditWriter
from toolproof.stores import PostgresStore, SqliteStore, Store
from toolproof.stores._intent import Intent
from toolproof.stores._records import AuditRecord, StopRecord

BAD = "chat\x00\ud800-1"
SHOWN = "chat\ufffd\ufffd-1"


def _audit(i: int, **changes: object) -> AuditRecord:
    rec = AuditRecord(at=1000.0 + i, call_id=f"c{i}", tool="t", schema_version="v1", arguments={"i": i},
                      validation="ok", attempt=1, latency_ms=1.0, outcome="ok")
    return replace(rec, **changes)  # type: ignore[arg-type]


def test_every_text_column_takes_nul_and_lone_surrogates(store: Store) -> None:
    now = time.time()
    intent = Intent(key="k", operation_id="op", tool="t", fingerprint="f", arguments={BAD: BAD},
                    status="in_flight", created_at=now, updated_at=now, owner="w", lease_until=now + 60,
                    call_id=BAD, conversation_id=BAD, principal=BAD)
    assert store.journal_claim(intent)
    assert not store.journal_claim(intent)  # the second claim of the same key loses: the key is found
    assert store.journal_finish("k", "w", "done", {"ok": True, "result": BAD}, now)
    found = store.journal_get("k")
    assert found is not None and found.status == "done"
    assert found.conversation_id in (BAD, SHOWN) and found.principal in (BAD, SHOWN)
    store.append_audit([_audit(1, tool=BAD, conversation_id=BAD, principal=BAD, run_id=BAD, call_id=BAD)])
    assert store.list_audit(limit=1)[0].conversation_id in (BAD, SHOWN)
    stop = StopRecord(id="s1", at=now, tool="t", call_id=BAD, arguments={"x": BAD}, error_class="internal_error",
                      code="X", message=BAD, attempts=1, effect_status="unknown", reason="non_retryable",
                      conversation_id=BAD)
    store.add_stop(stop)
    resolved = store.resolve_stop("s1", resolution=BAD)
    assert resolved is not None and resolved.message in (BAD, SHOWN) and resolved.resolution in (BAD, SHOWN)


@pytest.fixture
def pg_url(pg_dsn: str) -> Iterator[str]:
    schema = unique_schema()
    yield with_schema(pg_dsn, schema)
    drop_schema(pg_dsn, schema)


@toolproof.tool(effect="write")
def note(text: str) -> str:
    """Keep a note."""
    return text


def test_a_nul_in_a_conversation_id_stops_neither_the_journal_nor_the_audit_trail(pg_url: str) -> None:
    runner = toolproof.Runner(toolproof.Toolset([note]), store=pg_url)
    bad = toolproof.CallContext(conversation_id="chat\x00evil", principal="p\x00")
    first = runner.call_sync("note", {"text": "a\x00b"}, context=bad)
    assert first.ok, first.to_dict()
    again = runner.call_sync("note", {"text": "a\x00b"}, context=bad)
    assert again.ok and again.meta.replayed
    for i in range(5):
        assert runner.call_sync("note", {"text": f"n{i}"}, context=toolproof.CallContext(conversation_id="c")).ok
    runner.close()
    store = PostgresStore(pg_url)
    try:
        outcomes = sorted(r.outcome for r in store.list_audit(limit=100))
        assert outcomes == ["ok"] * 6 + ["replayed"]  # six attempts; the replay, answered by the journal
    finally:
        store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        s: Store = SqliteStore(tmp_path / "t.sqlite3")
    else:
        s = PostgresStore(request.getfixturevalue("pg_url"))
    yield s
    s.close()


def _entry(i: int, attempt: int = 1) -> AuditEntry:
    return AuditEntry(1000.0 + i, note, f"c{i}", None, None, None, None, {"text": "x"}, "ok", attempt, 0.001, "ok",
                      None)


def test_the_audit_writer_drops_a_poison_record_alone(sql_store: Store) -> None:
    writer = AuditWriter(sql_store, flush_interval_s=3600)
    poison = _entry(99, attempt=2**70)  # no INTEGER column holds it: refused by SQLite and PostgreSQL alike
    for entry in [*(_entry(i) for i in range(5)), poison, *(_entry(i) for i in range(5, 9))]:
        writer.submit(entry)
    assert writer.flush() == 9
    assert writer.dropped == 1
    writer.submit(_entry(20))
    writer.close()
    assert writer.dropped == 1
    assert sorted(r.call_id for r in sql_store.list_audit(limit=100)) == sorted(
        [f"c{i}" for i in range(9)] + ["c20"])


def test_log_lines_and_cli_errors_show_store_urls_without_their_password(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    secret_url = pg_url.replace("postgresql://postgres@", "postgresql://postgres:pw-9f8e7d6c@", 1)
    assert "pw-9f8e7d6c" in secret_url  # the test server trusts local connections: any password opens it
    store = PostgresStore(secret_url)
    writer = AuditWriter(store, flush_interval_s=3600)
    writer.submit(_entry(1, attempt=2**70))
    writer.flush()
    store.close()
    writer.submit(_entry(2))
    writer.close()
    assert writer.dropped == 1 and "postgres:***@" in caplog.text and "pw-9f8e7d6c" not in caplog.text
    failed = toolproof_cli("audit", "tail", "--store", "postgres+x://ana:pw-9f8e7d6c@db/x", code=2)
    assert "ana:***@" in failed.stderr and "pw-9f8e7d6c" not in failed.stderr
