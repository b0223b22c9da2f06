"""Who is asking: a write from a call that names no conversation is never merged with another caller's write
and never re-dispatched. The example's `place_order` on a real SQLite `orders` table, a durable SQLite journal."""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolproof
from tests.integrations.conftest import BUYER, ORDER, FaultyShop, faulty_toolset
from toolproof import CallContext, Envelope, Runner


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[FaultyShop]:
    found = FaultyShop(tmp_path / "orders.sqlite3", lost_replies=0)
    yield found
    found.close()


def runner_for(shop: FaultyShop, tmp_path: Path, **options: Any) -> Runner:
    return Runner(faulty_toolset(shop), store=f"sqlite:///{tmp_path / 'journal.sqlite3'}", **options)


async def place(runner: Runner, context: CallContext, how: str) -> Envelope:
    if how == "async":
        return await runner.call("place_order", ORDER, context=context)
    return runner.call_sync("place_order", ORDER, context=context)


@pytest.mark.parametrize("how", ["sync", "async"])
async def test_two_conversations_ordering_the_same_thing_get_two_orders(
        shop: FaultyShop, tmp_path: Path, how: str) -> None:
    with runner_for(shop, tmp_path) as runner:
        first = await place(runner, CallContext("chat-1", BUYER), how)
        second = await place(runner, CallContext("chat-2", BUYER), how)
    assert first.ok and second.ok, (first, second)
    assert first.meta.idempotency_key != second.meta.idempotency_key
    assert shop.count_orders() == 2


@pytest.mark.parametrize("how", ["sync", "async"])
async def test_the_same_order_twice_with_no_conversation_asks_and_names_the_first(
        shop: FaultyShop, tmp_path: Path, how: str) -> None:
    with runner_for(shop, tmp_path) as runner:
        first = await place(runner, CallContext(principal=BUYER), how)
        again = await place(runner, CallContext(principal=BUYER), how)
        assert first.ok and not again.ok, (first, again)
        assert shop.count_orders() == 1 and shop.inserts == 1
        error, key = again.error, first.meta.idempotency_key
        assert error is not None and key is not None
        assert (error.error_class, error.code) == (toolproof.ErrorClass.NEEDS_CLARIFICATION,
                                                   "REPEAT_WITHOUT_CONVERSATION")
        assert not again.meta.replayed and error.idempotency_key == key and key in error.message
        assert error.state is not None
        assert (error.state["idempotency_key"], error.state["status"]) == (key, "done")
        at = error.state["at"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", at) and at in error.message
        assert f'"order_id":{first.result["order_id"]}' in error.state["summary"].replace(" ", "")
        assert error.hint is not None and "occurrence" in error.hint and "conversation_id" in error.hint

        confirmed = await place(runner, CallContext(principal=BUYER, occurrence=1), how)
    assert confirmed.ok, confirmed
    assert confirmed.meta.idempotency_key != key
    assert shop.count_orders() == 2


@pytest.mark.parametrize("how", ["sync", "async"])
async def test_the_resend_of_a_timed_out_write_with_no_conversation_is_outcome_unknown_and_not_sent(
        tmp_path: Path, how: str) -> None:
    shop = FaultyShop(tmp_path / "orders.sqlite3", lost_replies=1)
    try:
        with runner_for(shop, tmp_path) as runner:
            lost = await place(runner, CallContext(principal=BUYER), how)
            resend = await place(runner, CallContext(principal=BUYER), how)
        assert lost.error is not None and resend.error is not None
        assert lost.error.error_class == resend.error.error_class == toolproof.ErrorClass.OUTCOME_UNKNOWN
        assert resend.error.idempotency_key == lost.error.idempotency_key is not None
        assert shop.inserts == 1 and shop.count_orders() == 1
    finally:
        shop.close()


def test_another_principal_is_another_caller(shop: FaultyShop, tmp_path: Path) -> None:
    with runner_for(shop, tmp_path) as runner:
        assert runner.call_sync("place_order", ORDER, context=CallContext(principal="B-17")).ok
        assert runner.call_sync("place_order", ORDER, context=CallContext(principal="B-18")).ok
    assert shop.count_orders() == 2


def test_a_runner_warns_once_about_writes_with_no_conversation(
        shop: FaultyShop, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolproof")
    with runner_for(shop, tmp_path) as runner:
        runner.call_sync("get_today_price", {"crop": "onion"})  # a read: no journal, no warning
        assert not caplog.records
        runner.call_sync("place_order", ORDER, context=CallContext("chat-1", BUYER))
        assert not caplog.records
        for _ in range(3):
            runner.call_sync("place_order", ORDER, context=CallContext(principal=BUYER))
    warned = [r for r in caplog.records if "no conversation" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING and warned[0].name == "toolproof"
    assert "place_order" in warned[0].getMessage() and "needs_clarification" in warned[0].getMessage()
    caplog.clear()
    with runner_for(shop, tmp_path) as other:  # per runner: a new one says it again
        other.call_sync("place_order", ORDER, context=CallContext(principal=BUYER))
    assert len([r for r in caplog.records if "no conversation" in r.getMessage()]) == 1


def test_the_merge_policy_replays_and_says_so(
        shop: FaultyShop, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolproof")
    with runner_for(shop, tmp_path, unknown_conversation="replay") as runner:
        first = runner.call_sync("place_order", ORDER, context=CallContext(principal=BUYER))
        again = runner.call_sync("place_order", ORDER, context=CallContext(principal=BUYER))
    assert first.ok and again.ok and again.meta.replayed and again.result == first.result
    assert shop.count_orders() == 1
    assert "merged" in caplog.records[0].getMessage()
    with pytest.raises(ValueError, match="unknown_conversation"):
        runner_for(shop, tmp_path, unknown_conversation="maybe")


def test_past_the_window_an_identical_write_is_a_new_one(tmp_path: Path) -> None:
    """A plain write that inserts a row each time it runs (no key of its own) shows what is dispatched."""
    db = sqlite3.connect(tmp_path / "rows.sqlite3", isolation_level=None)
    db.execute("CREATE TABLE rows (note TEXT)")

    @toolproof.tool(effect="write")
    def note(text: str) -> dict[str, str]:
        """Write a note."""
        db.execute("INSERT INTO rows VALUES (?)", (text,))
        return {"saved": text}

    store = f"sqlite:///{tmp_path / 'journal.sqlite3'}"
    with Runner(toolproof.Toolset([note]), store=store, clarify_window_s=3600) as runner:
        assert runner.call_sync("note", {"text": "hi"}).ok
        asked = runner.call_sync("note", {"text": "hi"})
        assert asked.error is not None and asked.error.code == "REPEAT_WITHOUT_CONVERSATION"
    with Runner(toolproof.Toolset([note]), store=store, clarify_window_s=0) as runner:
        again = runner.call_sync("note", {"text": "hi"})
        assert again.ok and not again.meta.replayed, again
        assert runner.journal.show(again.meta.idempotency_key or "") is not None
    assert db.execute("SELECT COUNT(*) FROM rows").fetchone()[0] == 2
    db.close()
