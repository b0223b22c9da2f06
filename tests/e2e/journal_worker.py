"""A worker process for the exactly-once tests: the wholesaler's place_order and a non-idempotent invoice
write, journaled in a store given by URL, against a shop's SQLite file shared with the other workers.

    python journal_worker.py race STORE_URL SHOP_PATH INVOICES_PATH KEYS SYNC_DIR SEED
    python journal_worker.py crash STORE_URL SHOP_PATH READY_FILE
    python journal_worker.py repeat STORE_URL SHOP_PATH

`race` writes SYNC_DIR/ready-SEED and waits for SYNC_DIR/go, so all workers collide, then places KEYS
orders and invoices (one per
conversation c0..cN, in a shuffled order) and prints a JSON summary. `crash` places one order whose
handler commits the row, writes READY_FILE and then hangs, so the parent can SIGKILL it between the
effect's commit and the journal update. `repeat` (a restarted worker) sends that order again and prints its
envelope.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import toolproof
from toolproof.examples.wholesaler import Shop, build_toolset
from toolproof.journal._journal import Journal

TODAY = date(2026, 10, 19)
ORDER = {"crop": "groundnut", "quantity_kg": 40, "delivery_date": "2026-10-23"}


def invoice_tool(path: str) -> toolproof.Tool:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)

    @toolproof.tool(effect="write", idempotent=False)
    def send_invoice(amount_rs: int, ctx: toolproof.CallContext) -> dict[str, Any]:
        """Send one invoice (no unique key: a second send bills twice).

        Args:
            amount_rs: Amount in rupees.
        """
        cur = db.execute("INSERT INTO invoices (conversation, key) VALUES (?, ?)",
                         (ctx.conversation_id, ctx.idempotency_key))
        return {"invoice_id": cur.lastrowid, "amount_rs": amount_rs}

    return send_invoice


def create_invoices(path: str) -> None:
    """The invoices table (WAL), created once before the workers start."""
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, conversation TEXT, key TEXT)")


def race(store_url: str, shop_path: str, invoices_path: str, keys: int, sync_dir: str, seed: int) -> None:
    shop = Shop(shop_path, today=lambda: TODAY)
    tools = toolproof.Toolset([build_toolset(shop).get("place_order"), invoice_tool(invoices_path)])
    runner = toolproof.Runner(tools, store=store_url)
    runner.journal = Journal(runner.store, wait_s=20.0, poll_s=0.005)
    order = list(range(keys))
    random.Random(seed).shuffle(order)
    Path(sync_dir, f"ready-{seed}").touch()
    deadline = time.time() + 60
    while not Path(sync_dir, "go").exists() and time.time() < deadline:
        time.sleep(0.002)
    summary: dict[str, int] = {"dispatched": 0, "replayed": 0, "errors": 0}
    for i in order:
        ctx = toolproof.CallContext(conversation_id=f"c{i}", principal="B-17")
        for name, args in (("place_order", ORDER), ("send_invoice", {"amount_rs": 100 + i})):
            env = runner.call_sync(name, args, context=ctx)
            if not env.ok:
                summary["errors"] += 1
                print(env.to_json(), file=sys.stderr)
            elif env.meta.replayed:
                summary["replayed"] += 1
            else:
                summary["dispatched"] += 1
    runner.close()
    print(json.dumps(summary))


def crash_toolset(shop: Shop, ready_file: str | None) -> toolproof.Toolset:
    """place_order committing the row, then (with a ready file) announcing it and hanging before the reply."""

    @toolproof.tool(effect="write", idempotent=False, name="place_order")
    def place_order_then_hang(crop: str, quantity_kg: float, delivery_date: str,
                              ctx: toolproof.CallContext) -> dict[str, Any]:
        """Commit the order, then hang before replying (the reply is lost with the process).

        Args:
            crop: The crop.
            quantity_kg: Quantity in kg.
            delivery_date: Delivery day.
        """
        shop.insert_order(buyer_id="B-17", crop=crop, grade="A", quantity_kg=quantity_kg,
                          delivery_date=date.fromisoformat(delivery_date), request_key=ctx.idempotency_key or "")
        if ready_file is not None:
            # Written aside then renamed: the test polls for the file and must never read it half-written.
            Path(ready_file + ".part").write_text(ctx.idempotency_key or "")
            os.replace(ready_file + ".part", ready_file)
            time.sleep(600)
        return {"request_key": ctx.idempotency_key}

    return toolproof.Toolset([place_order_then_hang])


def crash(store_url: str, shop_path: str, ready_file: str) -> None:
    shop = Shop(shop_path, today=lambda: TODAY)
    runner = toolproof.Runner(crash_toolset(shop, ready_file), store=store_url)
    runner.journal = Journal(runner.store, lease_s=1.0)
    runner.call_sync("place_order", ORDER, context=toolproof.CallContext(conversation_id="crash", principal="B-17"))


def repeat(store_url: str, shop_path: str) -> None:
    shop = Shop(shop_path, today=lambda: TODAY)
    runner = toolproof.Runner(crash_toolset(shop, None), store=store_url)
    env = runner.call_sync("place_order", ORDER, context=toolproof.CallContext(conversation_id="crash",
                                                                               principal="B-17"))
    runner.close()
    print(env.to_json())


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "race":
        race(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6], int(sys.argv[7]))
    elif mode == "crash":
        crash(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "repeat":
        repeat(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
