"""A worker SIGKILLed mid-write leaves its claim `in_flight`; when its lease runs out, whoever notices first
(a restarted worker's repeat, `toolproof journal list`, several at once) turns it `unknown` and writes its
stop record, exactly once, naming the write, the key, the dead worker and what to do. Real processes, a real
SQLite file and the real PostgreSQL server.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli._run import json_lines, toolproof_cli
from tests.e2e.test_exactly_once import REPO_ROOT, WORKER, _env, store_url  # noqa: F401 - the fixture
from toolproof.stores import open_store

pytestmark = pytest.mark.e2e


def test_a_dead_workers_write_gets_one_stop_record(store_url: str, tmp_path: Path) -> None:  # noqa: F811
    shop_path, ready = tmp_path / "orders.sqlite3", tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, str(WORKER), "crash", store_url, str(shop_path), str(ready)],
                            env=_env(), cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not ready.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert ready.exists(), proc.stderr.read() if proc.stderr else ""
    os.kill(proc.pid, signal.SIGKILL)  # mid-write: the order is committed, the journal says in_flight
    proc.communicate(timeout=10)
    key = ready.read_text()
    store = open_store(store_url)
    try:
        row = store.journal_get(key)
        assert row is not None and row.status == "in_flight"
        time.sleep(max(0.0, row.lease_until - time.time()) + 0.05)
    finally:
        store.close()

    # Six observers at once: three restarted workers repeating the write, three `journal list`.
    observers = [subprocess.Popen([sys.executable, str(WORKER), "repeat", store_url, str(shop_path)], env=_env(),
                                  cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(3)]
    observers += [subprocess.Popen([sys.executable, "-m", "toolproof", "journal", "list", "--json", "-s", store_url],
                                   env=_env(), cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True) for _ in range(3)]
    outs = []
    for p in observers:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
        outs.append(out)
    for out in outs[:3]:  # the repeats are not dispatched: the outcome is unknown
        env = json.loads(out.strip().splitlines()[-1])
        assert env["error"]["class"] == "outcome_unknown" and env["error"]["idempotency_key"] == key

    stops = [s for s in json_lines(toolproof_cli("stops", "list", "--json", "-s", store_url).stdout)
             if s["idempotency_key"] == key]
    assert len(stops) == 1, stops
    stop = stops[0]
    assert (stop["reason"], stop["code"], stop["effect_status"], stop["tool"]) == (
        "worker_lost", "WORKER_LOST", "unknown", "place_order")
    assert f"pid {proc.pid} on {socket.gethostname()}" in stop["message"]
    assert key in stop["message"] and "toolproof journal resolve" in stop["message"]
    assert stop["extra"]["pid"] == proc.pid and stop["extra"]["host"] == socket.gethostname()

    # The operator reconciles: the stop is resolved with it; a second list writes no new stop.
    toolproof_cli("journal", "resolve", key, "--done", "-s", store_url)
    toolproof_cli("journal", "list", "-s", store_url)
    stops = [s for s in json_lines(toolproof_cli("stops", "list", "--status", "all", "--json", "-s", store_url).stdout)
             if s["idempotency_key"] == key]
    assert len(stops) == 1 and stops[0]["resolved_at"] is not None and stops[0]["effect_status"] == "done"
