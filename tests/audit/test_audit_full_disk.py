"""The audit writer on a store whose file cannot grow: the log says why ("database or disk is full"), once, and
the records wait and are written when there is room again. SQLite's own limit on the file's pages stands in for
a full disk: SQLite answers SQLITE_FULL for both, the same error and the same automatic rollback."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import toolproof
from toolproof import Runner, Toolset
from toolproof.stores import SqliteStore


@toolproof.tool(effect="read")
def echo(text: str) -> dict[str, int]:
    """Echo the length of a text.

    Use it to measure a text. Returns its length.
    """
    return {"length": len(text)}


def test_a_full_disk_is_named_once_not_hidden_by_a_rollback_error(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    store = SqliteStore(str(tmp_path / "tp.sqlite3"))
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages + 2}")  # the file cannot grow past two more pages
    runner = Runner(Toolset([echo]), store=store)
    with caplog.at_level(logging.WARNING, logger="toolproof"):
        for _round in range(20):  # twenty flushes while the file is full
            for _ in range(20):
                assert runner.call_sync("echo", {"text": "x" * 2000}).ok
            runner.flush()
    text = caplog.text
    assert "database or disk is full" in text
    assert "cannot rollback" not in text
    said = [r for r in caplog.records if "could not write" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
    store._db.execute("PRAGMA max_page_count = 1073741823")  # room again: everything that waited is written
    with caplog.at_level(logging.WARNING, logger="toolproof"):
        runner.close()
    assert "written to" in caplog.text and "again" in caplog.text
    reopened = SqliteStore(str(tmp_path / "tp.sqlite3"))
    assert len(reopened.list_audit(limit=1000)) == 400
    reopened.close()
