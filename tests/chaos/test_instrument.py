"""The instrumented function counts what returned, for sync and async handlers alike, and a tool declared
idempotent counts once per key: the count is what the report's double-effect rate rests on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import toolproof
from toolproof.chaos import run_chaos, scenario
from toolproof.chaos._instrument import Ledger, counting_method, instrument, pretended
from toolproof.chaos._scenarios import Fault


def async_toolset(booked: list[int]) -> toolproof.Toolset:
    @toolproof.tool(effect="write")
    async def book_seats(seats: int) -> dict[str, Any]:
        """Book seats on the next bus; each call books them again."""
        await asyncio.sleep(0)
        booked.append(seats)
        return {"booked": seats}

    return toolproof.Toolset([book_seats])


def test_an_async_write_tool_is_counted_bare_and_through_toolproof() -> None:
    booked: list[int] = []
    rows = run_chaos(async_toolset(booked), arguments={"book_seats": {"seats": 2}}, through=("bare", "toolproof"),
                     scenarios=[scenario("reply_lost"), scenario("racing_resends")])
    got = {(r.through, r.scenario): r.effects for r in rows}
    assert got == {("bare", "reply_lost"): 2, ("bare", "racing_resends"): 2,
                   ("toolproof", "reply_lost"): 1, ("toolproof", "racing_resends"): 1}
    assert len(booked) == 6  # the ledger counted exactly what the function did


def test_a_call_that_never_takes_effect_says_so() -> None:
    rows = run_chaos(async_toolset([]), arguments={"book_seats": {"seats": "many"}},
                     scenarios=[scenario("new_request_id")])
    assert rows[0].effects == 0 and rows[0].entries == 0
    assert rows[0].told[-1].startswith("invalid_argument")
    assert rows[0].note == "it never took effect: if the call failed before its effect, give --args"


def test_idempotent_entries_under_one_key_count_once_and_others_each(tmp_path: Path) -> None:
    @toolproof.tool(effect="write", idempotent=True)
    def set_limit(amount: int, ctx: toolproof.CallContext) -> int:
        """Set the card's limit; setting it again changes nothing."""
        return amount

    ledger = Ledger(tmp_path / "ledger.jsonl")
    counted = instrument(set_limit, ledger, Fault())
    for key in ("k1", "k1", "k2"):
        counted.handler(amount=5, ctx=toolproof.CallContext(idempotency_key=key))
    assert (ledger.entries(), ledger.effects(set_limit)) == (3, 2)
    assert "declared idempotent" in counting_method(set_limit)


def test_a_body_that_does_nothing_answers_as_the_type_its_function_declares(tmp_path: Path) -> None:
    from toolproof.examples.wholesaler import Shop, build_toolset
    from toolproof.examples.wholesaler.tools import Order

    shop = Shop(tmp_path / "shop.sqlite3")
    place = build_toolset(shop).get("place_order")
    answer = pretended(place)
    assert isinstance(answer, Order) and answer.order_id == 1 and answer.status == "placed"
    ledger = Ledger(tmp_path / "ledger.jsonl")
    counted = instrument(place, ledger, Fault("skip_effect"))
    assert counted.handler(crop="onion", quantity_kg=10, delivery_date=None, ctx=toolproof.CallContext()) == answer
    assert (ledger.entries(), shop.count_orders()) == (0, 0)
