"""Deferred settlements seen from another connection and another process (real SQLite file, real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from toolproof.stores import SqliteStore

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
CHILD = """
import sys, time
from toolproof.intent import Intent
from toolproof.stores import SqliteStore
store = SqliteStore(sys.argv[1])
now = time.time()
for i in range(20):
    store.journal_claim(Intent(key=f"k{i}", operation_id=f"o{i}", tool="t", fingerprint="f", arguments={},
                               status="in_flight", created_at=now, updated_at=now, owner="child", lease_until=now + 60))
    store.journal_finish(f"k{i}", "child", "done", {"ok": True, "result": i}, now, defer=True)
# no close(): the interpreter's exit must still write the deferred settlements
"""


def test_other_connection_sees_settlements_soon(tmp_path: Path) -> None:
    from .test_contract import _intent

    writer, reader = SqliteStore(tmp_path / "j.sqlite3"), SqliteStore(tmp_path / "j.sqlite3")
    try:
        writer.journal_claim(_intent())
        writer.journal_finish("k1", "w1", "done", {"ok": True}, 1.0, defer=True)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            row = reader.journal_get("k1")
            assert row is not None
            if row.status == "done":
                break
            time.sleep(0.005)
        assert row is not None and row.status == "done"
    finally:
        writer.close()
        reader.close()


def test_process_exit_writes_pending_settlements(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT / 'src'}{os.pathsep}{REPO_ROOT}"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    store = SqliteStore(path)
    try:
        rows = store.journal_list(limit=100)
        assert len(rows) == 20 and {r.status for r in rows} == {"done"}
    finally:
        store.close()
