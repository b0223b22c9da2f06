"""Exactly one effect, counted in the effect's own table: concurrent asyncio calls, racing worker processes
on one SQLite file and on PostgreSQL, and a worker SIGKILLed between the effect's commit and the journal
update. Real processes, real files, the real PostgreSQL server; nothing is faked.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

import toolproof
from tests.e2e.journal_worker import ORDER, crash_toolset, create_invoices
from tests.pg_support import drop_schema, unique_schema, with_schema
from toolproof.examples.wholesaler import Shop, build_toolset
from toolproof.stores import open_store

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
WORKER = HERE / "journal_worker.py"
TODAY = date(2026, 10, 19)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'journal.sqlite3'}?synchronous=NORMAL"
        return
    dsn = request.getfixturevalue("pg_dsn")
    schema = unique_schema("tp_e2e")
    yield with_schema(dsn, schema)
    drop_schema(dsn, schema)


def _env() -> dict[str, str]:
    paths = [str(REPO_ROOT / "src"), str(REPO_ROOT)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_50_concurrent_identical_calls_one_effect(kind: str, tmp_path: Path, request: pytest.FixtureRequest,
                                                        buyer: Any) -> None:
    shop = Shop(tmp_path / "orders.sqlite3", today=lambda: TODAY)
    schema = None
    if kind == "memory":
        url = "memory://"
    elif kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'journal.sqlite3'}"
    else:
        schema = unique_schema("tp_e2e")
        url = with_schema(request.getfixturevalue("pg_dsn"), schema)
    runner = toolproof.Runner(build_toolset(shop), store=url)
    try:
        envs = await asyncio.gather(*[runner.call("place_order", ORDER, context=buyer) for _ in range(50)])
        assert all(e.ok for e in envs), [e.to_dict() for e in envs if not e.ok][:1]
        assert sum(not e.meta.replayed for e in envs) == 1
        assert len({e.result["order_id"] for e in envs}) == 1
        assert len({e.meta.idempotency_key for e in envs}) == 1
        assert shop.count_orders() == 1
    finally:
        await runner.store.aclose()
        shop.close()
        if schema is not None:
            drop_schema(request.getfixturevalue("pg_dsn"), schema)


async def test_50_concurrent_calls_of_a_slow_async_write(buyer: Any) -> None:
    calls = 0

    @toolproof.tool(effect="write", timeout_s=5)
    async def book_truck(day: str, ctx: toolproof.CallContext) -> dict[str, str]:
        """Book the delivery truck for a day (slow upstream).

        Args:
            day: The day.
        """
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.05)
        return {"day": day}

    runner = toolproof.Runner(toolproof.Toolset([book_truck]))
    envs = await asyncio.gather(*[runner.call("book_truck", {"day": "mon"}, context=buyer) for _ in range(50)])
    assert calls == 1 and all(e.ok for e in envs) and sum(e.meta.replayed for e in envs) == 49


def test_four_processes_race_on_the_same_keys(store_url: str, tmp_path: Path) -> None:
    keys, workers = 15, 4
    shop_path, invoices_path, sync = tmp_path / "orders.sqlite3", tmp_path / "invoices.sqlite3", tmp_path / "sync"
    sync.mkdir()
    Shop(shop_path).close()  # create the orders table once
    create_invoices(str(invoices_path))
    procs = [subprocess.Popen([sys.executable, str(WORKER), "race", store_url, str(shop_path), str(invoices_path),
                               str(keys), str(sync), str(seed)], env=_env(), cwd=REPO_ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for seed in range(workers)]
    deadline = time.time() + 60
    while len(list(sync.glob("ready-*"))) < workers and time.time() < deadline:
        time.sleep(0.01)
    (sync / "go").touch()
    summaries = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
        summaries.append(json.loads(out.strip().splitlines()[-1]))
    assert sum(s["errors"] for s in summaries) == 0, summaries
    assert sum(s["dispatched"] for s in summaries) == 2 * keys  # one dispatch per key and tool, across 4 workers
    assert sum(s["replayed"] for s in summaries) == 2 * keys * (workers - 1)
    with sqlite3.connect(shop_path) as db:
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT request_key) FROM orders").fetchone() == (keys, keys)
    with sqlite3.connect(invoices_path) as db:  # no unique key here: only the journal prevents a double bill
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT conversation) FROM invoices").fetchone() == (keys, keys)


def test_worker_killed_between_effect_and_journal_update(store_url: str, tmp_path: Path) -> None:
    shop_path, ready = tmp_path / "orders.sqlite3", tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, str(WORKER), "crash", store_url, str(shop_path), str(ready)],
                            env=_env(), cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not ready.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert ready.exists(), proc.stderr.read() if proc.stderr else ""
    os.kill(proc.pid, signal.SIGKILL)  # the order is committed; the journal still says in_flight
    proc.communicate(timeout=10)
    key = ready.read_text()
    shop = Shop(shop_path, today=lambda: TODAY)
    store = open_store(store_url)
    try:
        assert shop.count_orders() == 1
        row = store.journal_get(key)
        assert row is not None and row.status == "in_flight"
        time.sleep(max(0.0, row.lease_until - time.time()) + 0.05)  # the dead worker's lease runs out
        # "Restart": a new runner over the same store. The repeat is not dispatched: the outcome is unknown.
        runner = toolproof.Runner(crash_toolset(shop, None), store=store)
        ctx = toolproof.CallContext(conversation_id="crash", principal="B-17")
        for _ in range(2):
            env = runner.call_sync("place_order", ORDER, context=ctx)
            assert env.error is not None and env.error.error_class == "outcome_unknown"
            assert env.error.idempotency_key == key
        assert [i.key for i in runner.journal.list(status="unknown")] == [key]
        assert shop.count_orders() == 1
        # Reconciliation: the key is in the effect's own table, so the order was placed.
        placed = shop.order_by_key(key)
        assert placed is not None
        runner.reconcile(key, "done", result={"request_key": key})
        replay = runner.call_sync("place_order", ORDER, context=ctx)
        assert replay.ok and replay.meta.replayed and replay.result == {"request_key": key}
        assert shop.count_orders() == 1  # no duplicate, nothing lost
    finally:
        store.close()
        shop.close()
