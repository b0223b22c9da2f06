"""Fencing: a worker whose claim lapsed and was taken over can neither settle the journal entry nor (through
its fencing token) write to the tool's own store; what its late attempt said is kept as evidence.

Two runners on one real SQLite journal, the shop a real SQLite file whose `orders` table keeps the token of
the write it holds and refuses a smaller one (the pattern docs/idempotency.md, "Fencing", describes).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import toolproof
from toolproof import NOT_DONE, CallContext, Conflict, Runner, Toolset
from toolproof.stores import SqliteStore

BUYER = CallContext(conversation_id="conv-fence", principal="alice")


class FencedShop:
    def __init__(self, path: Path) -> None:
        self.path = path
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE orders (key TEXT PRIMARY KEY, qty INTEGER, fence INTEGER)")
        self.writes = 0  # writes the shop applied
        self.refused = 0
        self.slow_first = threading.Event()  # set: the first call sleeps before writing
        self.calls = 0

    def place(self, key: str, fence: int, qty: int) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 1 and self.slow_first.is_set():
            time.sleep(1.0)
        with sqlite3.connect(self.path) as db:
            applied = db.execute(
                "INSERT INTO orders VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET qty = excluded.qty, "
                "fence = excluded.fence WHERE excluded.fence > orders.fence", (key, qty, fence)).rowcount
        if not applied:
            self.refused += 1
            raise Conflict("A newer claim holds this order; this write was refused.", code="FENCED_OUT",
                           effect_done=False)
        self.writes += 1
        return {"order": key[:12], "qty": qty, "fence": fence}

    def find(self, key: str) -> Any:
        with sqlite3.connect(self.path) as db:
            row = db.execute("SELECT qty, fence FROM orders WHERE key = ?", (key,)).fetchone()
        return NOT_DONE if row is None else {"order": key[:12], "qty": row[0], "fence": row[1]}


def tools(shop: FencedShop) -> Toolset:
    def find_order(qty: int, ctx: CallContext) -> Any:
        return shop.find(ctx.idempotency_key or "")

    @toolproof.tool(effect="write", verify=find_order)
    def place_order(qty: int, ctx: CallContext) -> dict[str, Any]:
        """Place an order. Use it to buy; not to look one up. Returns the order."""
        assert ctx.idempotency_key is not None and ctx.fence is not None
        return shop.place(ctx.idempotency_key, ctx.fence, qty)

    return Toolset([place_order])


def test_a_taken_over_workers_late_settle_is_refused_and_the_owners_result_stays(tmp_path: Path) -> None:
    shop, journal = FencedShop(tmp_path / "shop.db"), tmp_path / "j.db"
    shop.slow_first.set()
    # The first worker's lease is short and never renewed: it looks dead while its handler sleeps.
    slow = Runner(tools(shop), store=SqliteStore(journal), lease_s=0.3, heartbeat=False)
    late: list[toolproof.Envelope] = []
    first = threading.Thread(target=lambda: late.append(slow.call_sync("place_order", {"qty": 2}, context=BUYER)))
    first.start()
    time.sleep(0.5)  # its lease has ended
    with Runner(tools(shop), store=SqliteStore(journal)) as owner:
        taken = owner.call_sync("place_order", {"qty": 2}, context=BUYER)
        first.join()
        slow.close()
        assert taken.ok, taken.to_dict()
        key = taken.meta.idempotency_key
        assert key is not None
        entry = owner.store.journal_get(key)
        assert entry is not None and entry.status == "done" and entry.owner == owner.journal.owner
        assert taken.result["fence"] == entry.fence > 0
        (old,) = late
        assert old.error is not None and old.error.code == "FENCED_OUT"
        assert old.meta.extra["journal"] == "fenced"
        stops = {s.code: s for s in owner.store.stops_for_key(key)}
        assert stops["FENCED"].extra["evidence"]["error"]["code"] == "FENCED_OUT"
        assert stops["FENCED"].extra["fence"] < entry.fence
        assert stops["FENCED"].effect_status == "not_done"  # its write was refused: it says nothing was done
        assert stops["WORKER_LOST"].resolved_at is not None  # settled by the new owner's verify
        again = owner.call_sync("place_order", {"qty": 2}, context=BUYER)
        assert again.ok and again.meta.replayed and again.result == taken.result
    assert (shop.writes, shop.refused) == (1, 1)
    assert shop.find(key)["fence"] == taken.result["fence"]


def test_a_takeover_token_exceeds_the_holders_even_when_its_clock_is_behind(tmp_path: Path) -> None:
    from toolproof.journal._journal import Journal
    from toolproof.journal._keys import key_parts_for

    (tool,) = tools(FencedShop(tmp_path / "shop.db"))
    store = SqliteStore(tmp_path / "j.db")
    ahead = Journal(store, now=lambda: time.time() + 60, heartbeat=False)  # a worker whose clock runs fast
    behind = Journal(store, heartbeat=False)
    parts = key_parts_for(tool, {"qty": 1}, BUYER)
    holder = ahead.new_intent(tool, {"qty": 1}, BUYER, parts)
    taker = behind.new_intent(tool, {"qty": 1}, BUYER, parts, above=holder)
    assert taker.fence > holder.fence
    assert behind.new_intent(tool, {"qty": 1}, BUYER, parts).fence < holder.fence  # what the bump is for
    store.close()
