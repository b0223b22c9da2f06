"""The wholesaler's desk as every adapter test drives it, and the one script its scripted models follow.

No model provider is reachable from CI, so each framework runs its own agent loop with its own offline test
model, scripted to send: `"400"` for a number, an out-of-range quantity, a valid order (which commits and
then loses its reply), and the same order again. Everything else is real: the framework, the runner, the
example's tools on a real SQLite `orders` table.

`place_order` is the example's own tool, declared a plain write here (`idempotent=False`): the example's
table dedups a repeated request key by itself, so the runner would simply retry a lost reply and there
would be nothing to prove; as a plain write, a lost reply must give `outcome_unknown` and the resend must not
run the handler at all (`shop.inserts` counts the handler's inserts, `count_orders()` the rows).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

import toolproof
from toolproof.examples.wholesaler import Shop, build_toolset

TODAY = date(2026, 10, 19)
BUYER = "B-17"
ORDER = {"crop": "onion", "quantity_kg": 400, "delivery_date": "2026-10-23"}
AS_TEXT = {**ORDER, "quantity_kg": "400"}
TOO_MUCH = {**ORDER, "quantity_kg": 9000}
#: What the scripted model sends in the first conversation, one call per turn.
SCRIPT: tuple[dict[str, Any], ...] = (AS_TEXT, TOO_MUCH, ORDER, ORDER)


class FaultyShop(Shop):
    """The example's shop whose first `lost_replies` inserts commit and then raise `TimeoutError`.

    Every run of the handler's insert is counted in an `inserts` table of the same file, so the count holds
    across processes (`toolproof serve` children).
    """

    def __init__(self, path: str | Path, *, lost_replies: int = 1) -> None:
        super().__init__(path, today=lambda: TODAY)
        self.lost_replies = lost_replies
        self._counter = sqlite3.connect(str(path), isolation_level=None, timeout=30, check_same_thread=False)
        self._counter.execute("CREATE TABLE IF NOT EXISTS inserts (id INTEGER PRIMARY KEY)")

    @property
    def inserts(self) -> int:
        return int(self._counter.execute("SELECT COUNT(*) FROM inserts").fetchone()[0])

    def insert_order(self, **kwargs: Any) -> tuple[dict[str, Any], bool]:
        self._counter.execute("INSERT INTO inserts DEFAULT VALUES")
        found = super().insert_order(**kwargs)
        if self.inserts <= self.lost_replies:
            raise TimeoutError("the reply to place_order was lost after the order was committed")
        return found

    def close(self) -> None:
        self._counter.close()
        super().close()


def faulty_toolset(shop: Shop) -> toolproof.Toolset:
    """The six example tools, `place_order` as a plain write: not idempotent, and with no verify hook (a lost
    reply stays an unknown outcome, which is what these tests are about)."""
    tools = list(build_toolset(shop))
    return toolproof.Toolset(dataclasses.replace(t, idempotent=False, verify=None) if t.name == "place_order" else t
                             for t in tools)


@pytest.fixture
def faulty_shop(tmp_path: Path) -> Iterator[FaultyShop]:
    shop = FaultyShop(tmp_path / "orders.sqlite3")
    yield shop
    shop.close()


@pytest.fixture
def desk(faulty_shop: FaultyShop) -> Iterator[toolproof.Runner]:
    runner = toolproof.Runner(faulty_toolset(faulty_shop))
    yield runner
    runner.close()


def envelope_in(text: str) -> dict[str, Any]:
    """The envelope a model read, from the text it was sent (the envelope itself, or wrapped once)."""
    data = json.loads(text)
    if "ok" not in data and isinstance(data.get("error"), str):  # pydantic-ai's `{"error": ...}` wrapper
        data = json.loads(data["error"])
    toolproof.Envelope.from_dict(data)  # it is a whole envelope of the published schema
    return data  # type: ignore[no-any-return]


def check_first_conversation(read: list[dict[str, Any]], shop: FaultyShop) -> None:
    """What the model read for SCRIPT, and what happened to the orders table."""
    assert len(read) == 4, read
    as_text, too_much, lost, resend = (e.get("error") or {} for e in read)
    assert not read[0]["ok"] and as_text["class"] == "invalid_argument", read[0]
    assert (as_text["code"], as_text["field"], as_text["received"]) == ("WRONG_TYPE", "quantity_kg", "400")
    assert (too_much["class"], too_much["field"], too_much["received"]) == ("invalid_argument", "quantity_kg", 9000)
    assert "5000" in too_much["hint"]
    assert lost["class"] == "outcome_unknown" and lost["idempotency_key"], read[2]
    assert resend["class"] == "outcome_unknown" and resend["idempotency_key"] == lost["idempotency_key"], read[3]
    assert shop.inserts == 1, "the resend was dispatched"
    assert shop.count_orders() == 1


def check_second_conversation(read: list[dict[str, Any]], shop: FaultyShop) -> None:
    """Another conversation placing the same order gets its own order."""
    assert [e["ok"] for e in read] == [True], read
    assert read[0]["result"]["note"] == "New order placed"
    assert shop.count_orders() == 2
