"""Closing a runner writes every audit record, and on the async path no store call blocks the event loop.

Real SQLite files, read back with a second store. The slow store is a real `SqliteStore` whose calls each
sleep first (a slow disk); the event loop runs in asyncio debug mode, which reports any callback that holds
the loop longer than `slow_callback_duration`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from toolproof import CallContext, Runner, Tool, Toolset
from toolproof.contract._envelope import Envelope, ErrorInfo, Meta
from toolproof.contract._errors import AuthFailed, TransientUpstream
from toolproof.journal._keys import key_parts_for
from toolproof.stores import SqliteStore

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}


def echo(args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    return args


def read_back(path: Path) -> int:
    reader = SqliteStore(path)
    try:
        return len(reader.list_audit(limit=1000))
    finally:
        reader.close()


def test_aclose_writes_every_audit_record(tmp_path: Path) -> None:
    path = tmp_path / "toolproof.sqlite3"
    toolset = Toolset([Tool.from_schema("echo", "Echo.", SCHEMA, echo, effect="read")])

    async def main() -> None:
        runner = Runner(toolset, store=f"sqlite:///{path}")
        for i in range(5):
            assert (await runner.call("echo", {"q": str(i)})).ok
        await runner.aclose()

    asyncio.run(main())
    assert read_back(path) == 5


def test_close_writes_every_audit_record(tmp_path: Path) -> None:
    path = tmp_path / "toolproof.sqlite3"
    runner = Runner(Toolset([Tool.from_schema("echo", "Echo.", SCHEMA, echo, effect="read")]),
                    store=f"sqlite:///{path}")
    for i in range(5):
        assert runner.call_sync("echo", {"q": str(i)}).ok
    runner.close()
    assert read_back(path) == 5


# --- no store call on the event loop ------------------------------------------------------------------------

DELAY_S = 0.2


class SlowSqlite(SqliteStore):
    """A real SQLite store on a slow disk: every call sleeps first, and notes the thread it ran on."""

    def __init__(self, path: Path) -> None:
        self.threads: list[tuple[str, int]] = []
        super().__init__(path)


def _slowed(name: str) -> Any:
    def method(self: SlowSqlite, *args: Any, **kwargs: Any) -> Any:
        self.threads.append((name, threading.get_ident()))
        time.sleep(DELAY_S)
        return getattr(SqliteStore, name)(self, *args, **kwargs)

    return method


STORE_CALLS = ("journal_claim", "journal_get", "journal_for_operation", "journal_finish", "journal_release",
               "journal_expire", "add_stop", "append_audit", "close")
for _name in STORE_CALLS:
    setattr(SlowSqlite, _name, _slowed(_name))


def slow_handler(args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    time.sleep(DELAY_S)  # a sync handler doing blocking I/O, with no timeout_s
    return args


def locked(args: dict[str, Any], ctx: CallContext) -> None:
    raise AuthFailed("The account is locked.")


def flaky_write(args: dict[str, Any], ctx: CallContext) -> None:
    raise TransientUpstream("The order service answered 503.")


def slow_toolset() -> Toolset:
    return Toolset([
        Tool.from_schema("place", "Place an order.", SCHEMA, echo, effect="write", idempotent=False),
        Tool.from_schema("charge", "Charge a card.", SCHEMA, flaky_write, effect="write", idempotent=False),
        Tool.from_schema("account", "Read an account.", SCHEMA, locked, effect="read"),
        Tool.from_schema("report", "Build a report.", SCHEMA, slow_handler, effect="read"),
    ])


async def exercise(runner: Runner, store: SlowSqlite) -> list[Envelope]:
    """Every kind of store call the async path makes: claim, record, stop records, audit, close."""
    envelopes = [
        await runner.call("place", {"q": "1"}),  # claim + finish
        await runner.call("charge", {"q": "2"}),  # claim, give-up stop record, finish as unknown
        await runner.call("account", {"q": "3"}),  # a read given up on: a stop record without an async form
        await runner.call("report", {"q": "4"}),  # a blocking sync handler
    ]
    # The journal on its own: an unknown outcome without a stop record writes one (`arecord` -> add_stop).
    tool = runner.toolset.get("charge")
    ctx = CallContext(call_id="direct")
    intent = runner.journal.new_intent(tool, {"q": "5"}, ctx, key_parts_for(tool, {"q": "5"}, ctx))
    assert (await runner.journal.aclaim(intent)).kind == "proceed"
    lost = ErrorInfo.from_exception(TransientUpstream("lost"))
    envelopes.append(await runner.journal.arecord(intent, tool, Envelope.failure(lost, Meta("charge", "direct"))))
    await runner.aclose()
    return envelopes


def test_no_store_call_blocks_the_event_loop(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="asyncio")
    store = SlowSqlite(tmp_path / "slow.sqlite3")
    runner = Runner(slow_toolset(), store=store)
    loop_threads: list[int] = []

    async def main() -> list[Envelope]:
        loop = asyncio.get_running_loop()
        loop.slow_callback_duration = DELAY_S / 2
        loop_threads.append(threading.get_ident())
        return await exercise(runner, store)

    envelopes = asyncio.run(main(), debug=True)

    assert [e.ok for e in envelopes] == [True, False, False, True, False]
    assert envelopes[1].error is not None and envelopes[1].error.error_class == "outcome_unknown"
    assert envelopes[4].meta.idempotency_key is not None
    called = {name for name, _ in store.threads}
    assert called >= {"journal_claim", "journal_finish", "add_stop", "append_audit", "close"}, called
    on_loop = [name for name, thread in store.threads if thread == loop_threads[0]]
    assert on_loop == [], f"store calls ran on the event loop: {on_loop}"
    stalls = [float(m) for m in re.findall(r"took (\d+\.\d+) seconds", caplog.text)]
    assert not [s for s in stalls if s >= DELAY_S], caplog.text  # nothing held the loop for a store call's time
    reader = SqliteStore(tmp_path / "slow.sqlite3")
    try:
        assert len(reader.list_audit(limit=100)) == 4  # one per dispatched attempt, written by aclose()
        assert len(reader.list_stops()) == 3
    finally:
        reader.close()
