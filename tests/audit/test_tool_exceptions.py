"""A tool's own exception is visible to its developer (audit record, stop record, a WARNING, `audit show`), redacted
and bounded, and never to the model: the runner through its public API on a real SQLite file, read back."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Annotated, Any

import pytest

import toolproof
from toolproof.audit._trail import MAX_EXCEPTION_MESSAGE, MAX_TRACEBACK
from toolproof.stores._sql import MIGRATIONS, SCHEMA_VERSION

TOKEN = "tok-0123456789abcdef"  # the call's secret argument
PASSWORD = "hunter2hunter2"  # a secret only the free-text redaction recognises (`password=...`)


def crash_in_helper(note: str, token: str) -> None:
    raise RuntimeError(f"disk full writing {note!r} with {token}, password={PASSWORD}")


def toolset() -> toolproof.Toolset:
    @toolproof.tool(effect="read")
    def set_note(note: str, api_token: Annotated[str, toolproof.Secret]) -> str:
        """Set the note of the day.

        Args:
            note: The note.
            api_token: The notes service token.
        """
        if note == "huge":
            raise ValueError("x" * 200_000)
        crash_in_helper(note, api_token)
        return note

    @toolproof.tool(effect="read")
    def find_row(row: int) -> dict[str, int]:
        """Find one row.

        Args:
            row: The row number.
        """
        try:
            return {"value": {1: 10}[row]}
        except KeyError as exc:
            raise toolproof.NotFound(f"No row {row}.") from exc

    return toolproof.Toolset([set_note, find_row])


def run(url: str, tool: str, args: dict[str, Any]) -> toolproof.Envelope:
    runner = toolproof.Runner(toolset(), store=url)
    try:
        return runner.call_sync(tool, args)
    finally:
        runner.close()


def records(url: str, call_id: str) -> tuple[toolproof.AuditRecord, toolproof.StopRecord]:
    store = toolproof.open_store(url)
    try:
        (audit,) = store.list_audit(call_id=call_id)
        (stop,) = store.list_stops(call_id=call_id)
        return audit, stop
    finally:
        store.close()


def test_a_crashing_tool_leaves_type_message_and_traceback_for_its_developer_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolproof")
    url = f"sqlite:///{tmp_path / 'trail.sqlite3'}"
    env = run(url, "set_note", {"note": "hello", "api_token": TOKEN})

    # The model: the class and the hint, no trace of the exception.
    assert env.error is not None and env.error.error_class.value == "internal_error"
    shown = env.to_json()
    for leak in ("Traceback", "RuntimeError", "disk full", "crash_in_helper", TOKEN, PASSWORD):
        assert leak not in shown, leak

    # The developer: both records, read back from the file, with the exception redacted.
    audit, stop = records(url, env.meta.call_id)
    for rec in (audit, stop):
        assert rec.exception_type == "RuntimeError"
        assert rec.exception_message == "disk full writing 'hello' with [REDACTED], password=[REDACTED]"
        assert rec.traceback is not None and rec.traceback.startswith("Traceback (most recent call last):")
        assert "in crash_in_helper" in rec.traceback and rec.traceback.endswith(rec.exception_message)
        assert TOKEN not in rec.traceback and PASSWORD not in rec.traceback
    assert stop.id == env.meta.extra["stop_id"]

    # The log: one WARNING with the call id, the tool, the class and the redacted traceback.
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING and "raised" in r.getMessage()]
    text = warning.getMessage()
    assert warning.name.startswith("toolproof")
    assert env.meta.call_id in text and "set_note" in text and "internal_error" in text
    assert "in crash_in_helper" in text and "RuntimeError: disk full" in text
    assert TOKEN not in caplog.text and PASSWORD not in caplog.text


def test_a_tool_error_raised_from_another_exception_keeps_the_cause(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'trail.sqlite3'}"
    env = run(url, "find_row", {"row": 7})
    assert env.error is not None and env.error.code == "NOT_FOUND" and "KeyError" not in env.to_json()
    store = toolproof.open_store(url)
    try:
        (audit,) = store.list_audit(call_id=env.meta.call_id)
    finally:
        store.close()
    assert audit.exception_type == "KeyError" and audit.exception_message == "7"
    assert audit.traceback is not None and "direct cause" in audit.traceback
    assert audit.traceback.endswith("NotFound: No row 7.")


def test_a_deliberate_tool_error_records_no_exception(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'trail.sqlite3'}"
    runner = toolproof.Runner(toolset(), store=url)
    ok, invalid = runner.call_sync("find_row", {"row": 1}), runner.call_sync("find_row", {"row": "x"})
    runner.close()
    assert ok.ok and invalid.error is not None
    store = toolproof.open_store(url)
    try:
        rows = store.list_audit()
    finally:
        store.close()
    assert len(rows) == 2 and all(r.exception_type is None and r.traceback is None for r in rows)


def test_what_a_record_keeps_of_an_exception_is_bounded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'trail.sqlite3'}"
    env = run(url, "set_note", {"note": "huge", "api_token": TOKEN})
    audit, stop = records(url, env.meta.call_id)
    for rec in (audit, stop):
        assert rec.exception_type == "ValueError"
        assert rec.exception_message is not None and len(rec.exception_message) < MAX_EXCEPTION_MESSAGE + 100
        assert rec.traceback is not None and len(rec.traceback) < MAX_TRACEBACK + 100
        assert "characters cut" in rec.traceback and rec.traceback.startswith("Traceback")


def test_a_store_of_the_first_schema_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("CREATE TABLE toolproof_schema (version INTEGER NOT NULL)")
    (version, statements) = MIGRATIONS[0]
    for statement in statements:
        old.execute(statement.format(real="REAL", serial="INTEGER PRIMARY KEY AUTOINCREMENT"))
    old.execute("INSERT INTO toolproof_schema (version) VALUES (?)", (version,))
    old.execute("INSERT INTO toolproof_audit (at, call_id, tool, arguments, validation, attempt, latency_ms, outcome,"
                " failing_fields) VALUES (1.5, 'old-call', 'set_note', '{}', 'ok', 1, 0.1, 'ok', '[]')")
    old.close()

    url = f"sqlite:///{path}"
    env = run(url, "set_note", {"note": "hello", "api_token": TOKEN})
    store = toolproof.open_store(url, create=False)
    try:
        assert store.schema_version() == SCHEMA_VERSION  # type: ignore[attr-defined]
        (kept,) = store.list_audit(call_id="old-call")
        (new,) = store.list_audit(call_id=env.meta.call_id)
    finally:
        store.close()
    assert kept.outcome == "ok" and kept.exception_type is None and kept.traceback is None
    assert new.exception_type == "RuntimeError"
