"""A write journal that cannot be reached: the runner claims again under its retry policy, and when the journal
stays away it gives up honestly (escalate, a stop record), never saying that someone will retry. A real
SQLite file, locked by a real second connection."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

import toolproof
from toolproof import CallContext, Runner, Tool, Toolset
from toolproof.orchestration.policy import RetryPolicy
from toolproof.stores import SqliteStore

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False}


def writer(calls: list[int]) -> Tool:
    def place(args: dict[str, Any], ctx: CallContext) -> Any:
        calls.append(args["n"])
        return {"placed": args["n"]}

    return Tool.from_schema("place_order", "Place an order.", SCHEMA, place, effect="write", idempotent=False)


def locked(path: Path) -> sqlite3.Connection:
    """Another process's exclusive lock on the journal's file: every claim fails until it is released."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("BEGIN EXCLUSIVE")
    return db


def test_the_claim_is_retried_while_the_journal_is_away(tmp_path: Path) -> None:
    calls: list[int] = []
    store = SqliteStore(tmp_path / "j.sqlite3", busy_timeout_s=0.01)
    r = Runner(Toolset([writer(calls)]), store=store, audit=False,
               retry=RetryPolicy(max_attempts=6, base_delay_s=0.1, jitter="none", max_wall_s=10))
    lock = locked(tmp_path / "j.sqlite3")
    threading.Timer(0.25, lock.rollback).start()  # the journal comes back after a quarter of a second
    env = r.call_sync("place_order", {"n": 1}, context=CallContext(conversation_id="c1"))
    assert env.ok and calls == [1]
    store.close()


def test_a_journal_that_stays_away_is_an_honest_give_up(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []
    store = SqliteStore(tmp_path / "j.sqlite3", busy_timeout_s=0.01)
    r = Runner(Toolset([writer(calls)]), store=store, audit=False)  # the default policy: one attempt
    lock = locked(tmp_path / "j.sqlite3")
    try:
        env = r.call_sync("place_order", {"n": 1}, context=CallContext(conversation_id="c1"))
    finally:
        lock.rollback()
    assert env.error is not None and env.error.code == "JOURNAL_UNAVAILABLE" and calls == []
    assert env.error.next_action == "escalate"  # nobody retries it: the envelope must not say someone will
    assert "retries" not in (env.error.hint or "") and "not sent" in (env.error.hint or "")
    # The stop record cannot reach the locked store either: it is logged, with its id and effect status.
    stop_id = env.meta.extra["stop_id"]
    assert any(stop_id in m and "effect=not_done" in m for m in caplog.messages)
    assert toolproof.Envelope.from_dict(env.to_dict()) == env
    store.close()
