"""The PostgreSQL store when the server drops or refuses connections, and how many connections Runners hold.

All against the real server: connections are dropped with `pg_terminate_backend` (only this test's, found by
a unique `application_name` in the store URL) and refused by closing a real TCP relay in front of the server.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import toolproof
from tests.pg_support import drop_schema, unique_schema, with_schema
from toolproof import CallContext
from toolproof.stores import PostgresStore
from toolproof.stores._intent import Intent
from toolproof.stores._postgres import POOLS


def _toolset() -> toolproof.Toolset:
    @toolproof.tool(effect="write", idempotent=False)
    def place_order(sku: str) -> dict[str, str]:
        """Place an order."""
        return {"placed": sku}

    return toolproof.Toolset([place_order])


@pytest.fixture
def app(pg_dsn: str) -> Iterator[tuple[str, str]]:
    """(a store URL in a fresh schema whose connections carry a unique application name, that name)."""
    schema, name = unique_schema(), f"tp_{uuid.uuid4().hex[:12]}"
    yield f"{with_schema(pg_dsn, schema)}&application_name={name}", name
    drop_schema(pg_dsn, schema)


def _backends(dsn: str, name: str, *, terminate: bool = False) -> int:
    what = "pg_terminate_backend(pid)" if terminate else "pid"
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(f"SELECT {what} FROM pg_stat_activity WHERE application_name = %s", (name,)).fetchall()
    return len(rows)


def _status(runner: toolproof.Runner, key: str) -> str:
    intent = runner.store.journal_get(key)
    assert intent is not None
    return intent.status


def test_a_write_after_the_server_dropped_every_connection_is_recorded(pg_dsn: str, app: tuple[str, str]) -> None:
    url, name = app
    with toolproof.Runner(_toolset(), store=url) as runner:
        assert runner.call_sync("place_order", {"sku": "A"}, context=CallContext(conversation_id="c1")).ok
        assert _backends(pg_dsn, name, terminate=True) >= 2
        time.sleep(0.2)
        envelope = runner.call_sync("place_order", {"sku": "B"}, context=CallContext(conversation_id="c2"))
        assert envelope.ok, envelope.to_dict()
        assert "journal" not in envelope.meta.extra
        assert envelope.meta.idempotency_key is not None
        assert _status(runner, envelope.meta.idempotency_key) == "done"


def test_an_async_write_after_dropped_connections_is_recorded(pg_dsn: str, app: tuple[str, str]) -> None:
    url, name = app

    async def main() -> list[Any]:
        runner = toolproof.Runner(_toolset(), store=url)
        first = await runner.call("place_order", {"sku": "A"}, context=CallContext(conversation_id="c1"))
        await asyncio.to_thread(_backends, pg_dsn, name, terminate=True)
        await asyncio.sleep(0.2)
        second = await runner.call("place_order", {"sku": "B"}, context=CallContext(conversation_id="c2"))
        statuses = [await runner.store.ajournal_get(e.meta.idempotency_key or "") for e in (first, second)]
        await runner.aclose()
        return [second, *statuses]

    second, *intents = asyncio.run(main())
    assert second.ok and "journal" not in second.meta.extra, second.to_dict()
    assert [i.status for i in intents] == ["done", "done"]



def _intent(key: str) -> Intent:
    now = time.time()
    return Intent(key=key, operation_id=f"op-{key}", tool="place_order", fingerprint="f", arguments={},
                  status="in_flight", created_at=now, updated_at=now, owner="me", lease_until=now + 60)


def test_a_statement_after_the_server_dropped_the_idle_connections_uses_a_new_one(
        pg_dsn: str, app: tuple[str, str]) -> None:
    """At the store, with no retry above it: the checkout sees the dropped connection and replaces it."""
    url, name = app
    store = PostgresStore(url)
    try:
        assert store.journal_claim(_intent("k1"))
        assert store.journal_finish("k1", "me", "done", {"ok": True}, time.time())
        assert _backends(pg_dsn, name, terminate=True) >= 2
        time.sleep(0.2)
        assert store.journal_claim(_intent("k2"))  # a dropped connection used here would raise
        assert store.journal_finish("k2", "me", "done", {"ok": True}, time.time())
        assert [store.journal_get(k).status for k in ("k1", "k2")] == ["done", "done"]  # type: ignore[union-attr]
    finally:
        store.close()


def test_an_async_statement_after_the_server_dropped_the_idle_connections_uses_a_new_one(
        pg_dsn: str, app: tuple[str, str]) -> None:
    url, name = app

    async def main() -> list[bool]:
        store = PostgresStore(url)
        try:
            first = await store.ajournal_claim(_intent("k1"))
            await asyncio.to_thread(_backends, pg_dsn, name, terminate=True)
            await asyncio.sleep(0.2)
            return [first, await store.ajournal_claim(_intent("k2"))]
        finally:
            await store.aclose()

    assert asyncio.run(main()) == [True, True]


@pytest.mark.parametrize("loan", [0.0, 30.0])
def test_connections_kept_between_statements_go_back_to_the_pool_after_their_loan_and_after_errors(
        pg_dsn: str, app: tuple[str, str], monkeypatch: pytest.MonkeyPatch, loan: float) -> None:
    """A store keeps its connections borrowed between statements (with no loan time left each statement hands
    its connection back and borrows again); a failed statement leaves a usable one; more threads than the pool
    holds connections all get one (none waits out the pool's timeout), and the count stays bounded."""
    from toolproof.stores import _postgres as postgres

    url, name = app
    monkeypatch.setattr(postgres, "LOAN_S", loan)
    store = PostgresStore(url)
    try:
        assert all(store.journal_claim(_intent(f"k{i}")) for i in range(20))
        with pytest.raises(psycopg.errors.SyntaxError):
            store._run("SELEC 1")
        with pytest.raises(psycopg.errors.UndefinedTable):
            store._run_many("INSERT INTO no_such_table VALUES (?)", [(1,), (2,)])
        assert store.journal_claim(_intent("after"))
        assert store.journal_finish("after", "me", "done", {"ok": True}, time.time())
        assert _backends(pg_dsn, name) <= 3  # one thread: a settle connection, a claim one (two when the pool
        # grew while its first was still being opened)
        results: list[bool] = []
        threads = [threading.Thread(target=lambda t=t: results.extend(
            store.journal_claim(_intent(f"t{t}-{i}")) for i in range(30))) for t in range(24)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == [True] * 720
        assert time.monotonic() - started < 4.0  # the pool's timeout is 5 s
        assert _backends(pg_dsn, name) <= 8 + 1  # the claim pool's max_size, and the settle connection
    finally:
        store.close()
    deadline = time.monotonic() + 5
    while _backends(pg_dsn, name) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _backends(pg_dsn, name) == 0


def test_the_local_checkout_check_reads_the_transaction_status_psycopg_names_idle() -> None:
    from psycopg import pq

    from toolproof.stores import _postgres as postgres

    assert postgres._IDLE == pq.TransactionStatus.IDLE

SCRIPT = """
import asyncio, sys, toolproof
from toolproof import CallContext

@toolproof.tool(effect="write", idempotent=False)
def place_order(sku: str) -> dict:
    \"\"\"Place an order.\"\"\"
    return {"placed": sku}

runner = toolproof.Runner(toolproof.Toolset([place_order]), store=sys.argv[1])
envelope = asyncio.run(runner.call("place_order", {"sku": "A"}, context=CallContext(conversation_id="c1")))
print("ok" if envelope.ok else envelope.to_dict())
"""


@pytest.mark.e2e
def test_asyncio_run_of_a_call_returns_without_closing_the_runner(app: tuple[str, str]) -> None:
    url, _ = app
    done = subprocess.run([sys.executable, "-c", SCRIPT, url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_runners_on_one_url_share_one_pool_per_role_and_the_last_close_releases_it(
        pg_dsn: str, app: tuple[str, str]) -> None:
    url, name = app
    entries = len(POOLS)
    runners = [toolproof.Runner(_toolset(), store=url) for _ in range(10)]
    for i, runner in enumerate(runners):
        assert runner.call_sync("place_order", {"sku": f"S{i}"}, context=CallContext(conversation_id=f"c{i}")).ok
    assert _backends(pg_dsn, name) <= 2  # one claim and one settle connection, not two per Runner
    assert len(POOLS) == entries + 2
    for runner in runners[:-1]:
        runner.close()
    assert runners[-1].call_sync("place_order", {"sku": "Z"}, context=CallContext(conversation_id="z")).ok
    runners[-1].close()
    assert len(POOLS) == entries
    deadline = time.monotonic() + 5
    while _backends(pg_dsn, name) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _backends(pg_dsn, name) == 0


class Relay:
    """A real TCP relay to the server; `refuse()` closes it, so new connections are refused."""

    def __init__(self, port: int) -> None:
        self.target = ("127.0.0.1", port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()

    def refuse(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close() alone would not
        self.listener.close()
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def test_a_write_while_the_server_refuses_connections_is_refused_within_seconds(pg_dsn: str) -> None:
    schema = unique_schema()
    port = psycopg.conninfo.conninfo_to_dict(pg_dsn).get("port") or 5432
    relay = Relay(int(port))
    url = with_schema(pg_dsn.replace(f":{port}/", f":{relay.port}/"), schema)
    # One claim attempt: the bound under test is one wait (the retry policy retries a refused claim too).
    runner = toolproof.Runner(_toolset(), store=url, retry=toolproof.RetryPolicy(max_attempts=1))
    try:
        assert runner.call_sync("place_order", {"sku": "A"}, context=CallContext(conversation_id="c1")).ok
        relay.refuse()
        started = time.monotonic()
        envelope = runner.call_sync("place_order", {"sku": "B"}, context=CallContext(conversation_id="c2"))
        waited = time.monotonic() - started
    finally:
        runner.close()
        drop_schema(pg_dsn, schema)
    assert envelope.error is not None and envelope.error.code == "JOURNAL_UNAVAILABLE"
    assert "was not sent" in envelope.error.message
    # Two bounded waits of 5 s (the default), not 30 s each: the claim, then the stop record, both refused.
    assert waited < 13, f"a refused write waited {waited:.1f} s"
