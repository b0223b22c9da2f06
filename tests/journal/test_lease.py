"""Leases that live while a tool runs: a heartbeat renews a running write's short lease, so a second worker
waits for it (never runs it again) and a killed worker's claim lapses within the lease.

Real SQLite journal, real threads and a real subprocess killed with SIGKILL; the times are scaled down from
"a 60 s tool, a 5 s lease" to a 3 s tool and a 0.6 s lease so that the suite stays fast.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.pipeline.test_verify import ORDER, Shop, toolset
from toolproof import CallContext, Runner
from toolproof.journal._journal import HEARTBEAT_LEASE_S, Journal
from toolproof.journal._lease import LeaseKeeper
from toolproof.stores import SqliteStore

LEASE_S = 0.6
BUYER = CallContext(conversation_id="conv-lease", principal="alice")


def test_a_long_tool_keeps_a_short_lease_alive_and_a_resend_waits_for_it(tmp_path: Path) -> None:
    shop = Shop(tmp_path / "shop.db")
    shop.after_s = 3.0  # commits at once, runs for 3 s: five leases' worth
    journal = tmp_path / "j.db"
    first_worker = Runner(toolset(shop, timeout_s=10), store=SqliteStore(journal), lease_s=LEASE_S)
    answers = []
    thread = threading.Thread(target=lambda: answers.append(first_worker.call_sync("place_order", ORDER,
                                                                                    context=BUYER)))
    thread.start()
    deadline = time.monotonic() + 10
    while not shop.rows():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(2 * LEASE_S)  # long past the first lease
    second_worker = Runner(toolset(shop, timeout_s=10), store=SqliteStore(journal), lease_s=LEASE_S)
    (entry,) = second_worker.store.journal_list()
    assert entry.status == "in_flight" and entry.lease_until > time.time()  # renewed, not lapsed
    resent = second_worker.call_sync("place_order", ORDER, context=BUYER)  # waits for the running one
    thread.join()
    first_worker.close()
    second_worker.close()
    assert answers[0].ok and resent.ok and resent.meta.replayed
    assert len(shop.rows()) == 1


WORKER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from tests.pipeline.test_verify import Shop, toolset, ORDER
    from toolproof import CallContext, Runner
    from toolproof.stores import SqliteStore
    shop = Shop(Path({shop!r}))
    shop.after_s = 60
    runner = Runner(toolset(shop, timeout_s=120), store=SqliteStore({journal!r}), lease_s={lease!r})
    runner.call_sync("place_order", ORDER, context=CallContext(conversation_id="conv-lease", principal="alice"))
""")


def test_a_killed_workers_claim_is_taken_over_within_the_lease(tmp_path: Path) -> None:
    shop, journal = Shop(tmp_path / "shop.db"), tmp_path / "j.db"
    root = str(Path(__file__).resolve().parents[2])
    script = WORKER.format(root=root, shop=str(shop.path), journal=str(journal), lease=LEASE_S)
    path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
    worker = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": path})
    try:
        deadline = time.monotonic() + 30
        while not shop.rows():
            assert time.monotonic() < deadline, "the worker never committed"
            time.sleep(0.02)
        time.sleep(2 * LEASE_S)  # alive, renewing: not lapsed
        with Runner(toolset(shop), store=SqliteStore(journal), lease_s=LEASE_S) as peek:
            (entry,) = peek.store.journal_list()
            assert entry.status == "in_flight" and entry.lease_until > time.time()
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    killed = time.time()
    with Runner(toolset(shop), store=SqliteStore(journal), lease_s=LEASE_S) as runner:
        while True:  # the resend waits (IN_FLIGHT) while the lease runs, then verify settles it
            envelope = runner.call_sync("place_order", ORDER, context=BUYER)
            if envelope.ok:
                break
            assert time.time() - killed < 10, envelope.to_dict()
        taken_over = time.time() - killed
        assert envelope.meta.extra["verified"]["said"] == "done"
    assert taken_over < LEASE_S + 5.5  # the lease, plus at most one wait_s (5 s) of the resend
    assert len(shop.rows()) == 1


def test_the_defaults_and_the_settings() -> None:
    store = SqliteStore(":memory:")
    journal = Journal(store)
    assert journal.keeper is not None and journal.keeper.lease_s == HEARTBEAT_LEASE_S
    assert journal.keeper.every_s == pytest.approx(HEARTBEAT_LEASE_S / 3)
    assert Journal(store, heartbeat=False).keeper is None
    with pytest.raises(ValueError, match="heartbeat"):
        LeaseKeeper(store, time.time, lease_s=1.0, every_s=2.0)
    store.close()
