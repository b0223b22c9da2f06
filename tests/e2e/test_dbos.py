"""toolproof inside DBOS, with the real parts: DBOS's system database on the real PostgreSQL server (a database
of its own per run, dropped after), toolproof's journal in the same database, an application process
SIGKILLed after a step's effect and before DBOS checkpoints the step, then restarted: DBOS recovers the
workflow and re-runs the step. Effects are rows in a SQLite table, counted from the outside; the plain DBOS step
beside it is the baseline that shows the duplicate.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg_support import with_schema
from toolproof.contract._envelope import Envelope

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("dbos_worker.py")


@pytest.fixture
def dbos_database(pg_dsn: str) -> Iterator[str]:
    """A fresh database on the test server (DBOS's system tables and toolproof's journal), dropped after."""
    import psycopg

    name = f"tp_dbos_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    server = pg_dsn.rsplit("/", 1)[0]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}"
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _rows(path: Path, kind: str, order_id: str) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM effects WHERE kind = ? AND order_id = ?",
                              (kind, order_id)).fetchone()[0])


def test_a_killed_dbos_process_recovered_on_restart_makes_one_effect(dbos_database: str, tmp_path: Path) -> None:
    effects, ready = tmp_path / "effects.sqlite3", tmp_path / "ready"
    ready.mkdir()
    with sqlite3.connect(effects) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE effects (id INTEGER PRIMARY KEY, kind TEXT, order_id TEXT, pid INTEGER)")
    store = with_schema(dbos_database, "toolproof")
    orders = ["ord-1", "inhandler-1"]
    args = [sys.executable, str(WORKER), "crash", dbos_database, store, str(effects), str(ready), *orders]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    started = time.monotonic()
    crashing = subprocess.Popen(args, env=env, cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True)
    names = [f"{kind}-{o}" for o in orders for kind in ("tp", "plain")]
    deadline = time.monotonic() + 60
    while not all((ready / n).exists() for n in names):
        assert crashing.poll() is None, crashing.stderr.read() if crashing.stderr else ""
        assert time.monotonic() < deadline, [n for n in names if not (ready / n).exists()]
        time.sleep(0.02)
    os.kill(crashing.pid, signal.SIGKILL)  # every effect is done; DBOS has checkpointed no step
    crashing.communicate(timeout=10)
    killed_at = time.monotonic()

    args[2] = "recover"
    done = subprocess.run(args, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    results = {r["workflow"]: r["result"] for r in map(json.loads, done.stdout.strip().splitlines())}
    print(f"\ndbos kill: {time.monotonic() - started:.1f} s in all, {time.monotonic() - killed_at:.1f} s for the "
          f"restart and recovery; rows: payment {_rows(effects, 'payment', 'ord-1')}, in-handler "
          f"{_rows(effects, 'payment', 'inhandler-1')}, plain baseline {_rows(effects, 'plain', 'ord-1')} and "
          f"{_rows(effects, 'plain', 'inhandler-1')}")

    # The baseline: DBOS's recovery re-ran the plain step, a second effect each.
    assert _rows(effects, "plain", "ord-1") == 2 and _rows(effects, "plain", "inhandler-1") == 2
    # toolproof: recorded before the kill, replayed on recovery with the first result.
    assert _rows(effects, "payment", "ord-1") == 1
    first = Envelope.from_dict(results["tp-ord-1"])
    assert first.ok and first.meta.replayed and first.result["order_id"] == "ord-1"
    # Killed inside the handler: the dead claim's lease is outlasted, then outcome_unknown with the key.
    assert _rows(effects, "payment", "inhandler-1") == 1
    unknown = Envelope.from_dict(results["tp-inhandler-1"])
    assert unknown.error is not None and unknown.error.error_class.value == "outcome_unknown"
    assert unknown.error.idempotency_key is not None and unknown.error.idempotency_key.startswith("tp1_")
