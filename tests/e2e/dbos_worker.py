"""A DBOS application process for the durable-engine tests: a toolproof step beside a plain DBOS step.

    python dbos_worker.py crash SYSTEM_DB_URL STORE_URL EFFECTS_PATH READY_DIR ORDER_ID...
    python dbos_worker.py recover SYSTEM_DB_URL STORE_URL EFFECTS_PATH READY_DIR ORDER_ID...

Both steps write one row per effect into EFFECTS_PATH (a SQLite table `effects`). `crash` starts, for each
order, a workflow `tp-<order>` (toolproof's step) and `plain-<order>` (the plain step), and every step hangs
after its effect (toolproof's once the journal recorded it; an order id starting `inhandler` inside the
handler) and before DBOS checkpoints it, having written READY_DIR/<workflow id>: the parent SIGKILLs it.
`recover` is the restart: `DBOS.launch()` recovers the pending workflows; it prints each one's result as a
JSON line.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from dbos import DBOS, SetWorkflowID

import toolproof
from toolproof.contract._envelope import Envelope
from toolproof.integrations.dbos import tool_step
from toolproof.journal._journal import Journal
from toolproof.stores._intent import Intent
from toolproof.stores._steps import IoSteps

MODE, SYSTEM_DB, STORE_URL, EFFECTS, READY = sys.argv[1:6]
ORDERS = sys.argv[6:]
CRASH = MODE == "crash"
_db = sqlite3.connect(EFFECTS, isolation_level=None, check_same_thread=False, timeout=30)


def _insert(kind: str, order_id: str) -> int:
    cur = _db.execute("INSERT INTO effects (kind, order_id, pid) VALUES (?, ?, ?)", (kind, order_id, os.getpid()))
    return int(cur.lastrowid or 0)


def _hang(name: str) -> None:
    if CRASH:
        (Path(READY) / name).write_text(str(os.getpid()))
        time.sleep(3600)


class _HangingJournal(Journal):
    """Crash mode: the write is recorded, then the process dies before DBOS checkpoints the step (the journal's
    settle is steps, `recording`: the pause follows them)."""

    def recording(self, intent: Intent, tool: toolproof.Tool, envelope: Envelope, arguments: Any = None,
                  **settle: Any) -> IoSteps[Envelope]:
        recorded = yield from super().recording(intent, tool, envelope, arguments, **settle)
        order = str((arguments or {}).get("order_id", ""))
        if not order.startswith("inhandler"):
            _hang(f"tp-{order}")
        return recorded


@toolproof.tool(effect="write")
def record_payment(order_id: str, amount_rs: int) -> dict[str, Any]:
    """Record one payment (no unique key at the payment service: a second call pays twice).

    Args:
        order_id: The order paid for.
        amount_rs: Amount in rupees.
    """
    row = _insert("payment", order_id)
    if order_id.startswith("inhandler"):
        _hang(f"tp-{order_id}")
    return {"payment_id": row, "order_id": order_id, "amount_rs": amount_rs}


runner = toolproof.Runner(toolproof.Toolset([record_payment]), store=STORE_URL, retry=None)
runner.journal = (_HangingJournal if CRASH else Journal)(runner.store, lease_s=2.0, wait_s=0.5)
call_tool = tool_step(runner)


@DBOS.step()
def plain_record_payment(order_id: str) -> int:
    row = _insert("plain", order_id)
    _hang(f"plain-{order_id}")
    return row


@DBOS.workflow()
def pay(order_id: str) -> dict[str, Any]:
    return call_tool("record_payment", {"order_id": order_id, "amount_rs": 900}, principal="buyer-7")


@DBOS.workflow()
def plain_pay(order_id: str) -> int:
    return plain_record_payment(order_id)


def main() -> None:
    DBOS(config={"name": "toolproof-dbos-test", "system_database_url": SYSTEM_DB,
                 "notification_listener_polling_interval_sec": 0.05})
    DBOS.launch()  # on restart: recovers the workflows the killed process left pending
    if CRASH:
        for order in ORDERS:
            with SetWorkflowID(f"tp-{order}"):
                DBOS.start_workflow(pay, order)
            with SetWorkflowID(f"plain-{order}"):
                DBOS.start_workflow(plain_pay, order)
        time.sleep(3600)
    for order in ORDERS:
        for wid in (f"tp-{order}", f"plain-{order}"):
            print(json.dumps({"workflow": wid, "result": DBOS.retrieve_workflow(wid).get_result()}), flush=True)
    DBOS.destroy()


if __name__ == "__main__":
    main()
