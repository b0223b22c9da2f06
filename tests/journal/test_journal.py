"""The journal's state machine through the Runner: every repeat case of docs/idempotency.md, on real stores.

`send_invoice` is a deliberately NON-idempotent write (its table has no unique key) whose reply can be
"lost" after the row is committed, to prove the outcome_unknown path.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolproof
from toolproof.examples.wholesaler import Shop, build_toolset
from toolproof.journal._journal import Journal
from toolproof.stores import MemoryStore, SqliteStore, Store

ORDER = {"crop": "groundnut", "quantity_kg": 40, "delivery_date": "2026-10-23"}


class Invoices:
    """A real SQLite table with no unique key: sending twice bills twice."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, buyer TEXT, amount INT,"
                        " key TEXT)")
        self.lose_reply = False
        self.fail_with: Exception | None = None
        self.seen_keys: list[str | None] = []

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM invoices").fetchone()[0])


def invoice_tools(inv: Invoices, *, idempotent: bool = False) -> list[toolproof.Tool]:
    @toolproof.tool(effect="write", idempotent=idempotent, operation_keys=["amount_rs"])
    def send_invoice(
        amount_rs: int, ctx: toolproof.CallContext, note: str = "", api_token: Annotated[str, toolproof.Secret] = ""
    ) -> dict[str, Any]:
        """Send one invoice to the buyer.

        Args:
            amount_rs: Amount in rupees.
            note: A note printed on the invoice.
            api_token: The billing token.
        """
        inv.seen_keys.append(ctx.idempotency_key)
        if inv.fail_with is not None:
            raise inv.fail_with
        cur = inv.db.execute("INSERT INTO invoices (buyer, amount, key) VALUES (?, ?, ?)",
                             (ctx.principal, amount_rs, ctx.idempotency_key))
        if inv.lose_reply:
            raise TimeoutError("reply lost after commit")
        return {"invoice_id": cur.lastrowid, "amount_rs": amount_rs}

    return [send_invoice]


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s: Store = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "journal.sqlite3")
    yield s
    s.close()


@pytest.fixture
def invoices(tmp_path: Path) -> Iterator[Invoices]:
    inv = Invoices(tmp_path / "invoices.sqlite3")
    yield inv
    inv.db.close()


@pytest.fixture
def jr(shop: Shop, invoices: Invoices, store: Store) -> Iterator[toolproof.Runner]:
    """The wholesaler's tools plus the non-idempotent invoice tool, journaled in `store`."""
    wholesaler = build_toolset(shop)
    tools = toolproof.Toolset([*(wholesaler.get(n) for n in ("place_order", "get_order_status", "check_stock")),
                               *invoice_tools(invoices)])
    # The loop guard (tested in test_orchestrator) would stop identical repeats before the journal sees them.
    with toolproof.Runner(tools, store=store, loop_guard=None) as runner:
        yield runner


def test_first_call_dispatches_and_repeat_replays(jr: toolproof.Runner, shop: Shop, buyer: Any) -> None:
    first = jr.call_sync("place_order", ORDER, context=buyer)
    again = jr.call_sync("place_order", {**ORDER, "quantity_kg": 40.0, "grade": "A"}, context=buyer)
    assert first.ok and not first.meta.replayed and first.meta.idempotency_key
    assert again.ok and again.meta.replayed and again.meta.attempts == 0
    assert again.result == first.result and again.meta.idempotency_key == first.meta.idempotency_key
    assert again.meta.call_id != first.meta.call_id
    assert shop.count_orders() == 1


def test_handler_gets_our_key_never_the_callers(jr: toolproof.Runner, invoices: Invoices, buyer: Any) -> None:
    env = jr.call_sync("send_invoice", {"amount_rs": 500}, context=buyer.with_updates(idempotency_key="from-model"))
    assert env.ok and invoices.seen_keys == [env.meta.idempotency_key]
    assert env.meta.idempotency_key is not None and env.meta.idempotency_key.startswith("tp1_")


def test_reads_never_touch_the_journal(jr: toolproof.Runner, store: Store, buyer: Any) -> None:
    for _ in range(3):
        assert jr.call_sync("check_stock", {"crop": "onion"}, context=buyer).ok
    assert store.journal_list() == []


def test_lost_reply_on_non_idempotent_write_is_outcome_unknown(
    jr: toolproof.Runner, invoices: Invoices, store: Store, buyer: Any
) -> None:
    invoices.lose_reply = True
    env = jr.call_sync("send_invoice", {"amount_rs": 500}, context=buyer)
    assert env.error is not None and env.error.error_class == "outcome_unknown"
    key = env.error.idempotency_key
    assert key is not None and key == env.meta.idempotency_key
    stops = store.list_stops(resolved=False)
    assert [(s.idempotency_key, s.effect_status, s.reason) for s in stops] == [(key, "unknown", "outcome_unknown")]
    # Repeats are not dispatched: the envelope repeats outcome_unknown with the key, until reconciled.
    invoices.lose_reply = False
    for _ in range(3):
        again = jr.call_sync("send_invoice", {"amount_rs": 500}, context=buyer)
        assert again.error is not None and again.error.code == "OUTCOME_UNKNOWN" and again.error.idempotency_key == key
    assert invoices.count() == 1 and len(invoices.seen_keys) == 1
    # Same operation, different arguments, while unresolved: refused, nothing dispatched.
    changed = jr.call_sync("send_invoice", {"amount_rs": 500, "note": "urgent"}, context=buyer)
    assert changed.error is not None and changed.error.error_class == "conflict"
    assert changed.error.code == "UNRESOLVED_OPERATION" and changed.error.idempotency_key == key
    assert invoices.count() == 1
    # A person checks the invoices table, finds the row, and reconciles: repeats now replay that result.
    settled = jr.reconcile(key, "done", result={"invoice_id": 1, "amount_rs": 500})
    assert settled.status == "done"
    replay = jr.call_sync("send_invoice", {"amount_rs": 500}, context=buyer)
    assert replay.ok and replay.meta.replayed and replay.result == {"invoice_id": 1, "amount_rs": 500}
    stop = store.list_stops()[0]
    assert stop.resolved_at is not None and stop.effect_status == "done"
    assert invoices.count() == 1


def test_reconcile_not_done_lets_the_call_run_again(jr: toolproof.Runner, invoices: Invoices, buyer: Any) -> None:
    invoices.fail_with = ConnectionResetError("connection lost")
    env = jr.call_sync("send_invoice", {"amount_rs": 70}, context=buyer)
    assert env.error is not None and env.error.error_class == "outcome_unknown"
    assert env.error.code == "CONNECTION_LOST_AFTER_DISPATCH"
    assert env.error.idempotency_key is not None
    invoices.fail_with = None
    jr.reconcile(env.error.idempotency_key, "not_done")
    ok = jr.call_sync("send_invoice", {"amount_rs": 70}, context=buyer)
    assert ok.ok and not ok.meta.replayed and invoices.count() == 1
    with pytest.raises(toolproof.NotFound):
        jr.reconcile("tp1_nope", "done")
    with pytest.raises(ValueError, match="done"):
        jr.reconcile(ok.meta.idempotency_key or "", "maybe")


def test_already_done_with_different_args_asks_a_person(jr: toolproof.Runner, shop: Shop, buyer: Any) -> None:
    assert jr.call_sync("place_order", ORDER, context=buyer).ok
    env = jr.call_sync("place_order", {**ORDER, "quantity_kg": 400}, context=buyer)
    assert env.error is not None and env.error.error_class == "needs_clarification"
    assert env.error.code == "ALREADY_DONE_DIFFERENT_ARGS" and env.error.next_action == "ask_person"
    assert shop.count_orders() == 1
    # The person confirmed a second, separate order: the code (not the model) sets the occurrence.
    second = jr.call_sync("place_order", {**ORDER, "quantity_kg": 400}, context=buyer.with_updates(occurrence=1))
    assert second.ok and shop.count_orders() == 2


def test_same_key_changed_payload_is_refused(jr: toolproof.Runner, invoices: Invoices, buyer: Any) -> None:
    # `note` is not an operation key: same key, different payload (IETF: never reuse a key for another payload).
    assert jr.call_sync("send_invoice", {"amount_rs": 10, "note": "a"}, context=buyer).ok
    env = jr.call_sync("send_invoice", {"amount_rs": 10, "note": "b"}, context=buyer)
    assert env.error is not None and env.error.code == "ALREADY_DONE_DIFFERENT_ARGS"
    assert invoices.count() == 1


def test_pre_effect_error_releases_and_is_not_replayed(jr: toolproof.Runner, shop: Shop, store: Store,
                                                       buyer: Any) -> None:
    past = {**ORDER, "delivery_date": "2026-10-01"}
    for _ in range(2):
        env = jr.call_sync("place_order", past, context=buyer)
        assert env.error is not None and env.error.code == "DATE_NOT_IN_FUTURE" and not env.meta.replayed
        assert env.meta.attempts == 1  # dispatched each time: the error was not stored
    assert store.journal_list() == []
    fixed = jr.call_sync("place_order", ORDER, context=buyer)  # same operation, corrected arguments
    assert fixed.ok and shop.count_orders() == 1


def test_an_unexpected_exception_after_dispatch_is_unknown_and_never_resent(
        jr: toolproof.Runner, store: Store, invoices: Invoices, buyer: Any) -> None:
    """The body may have committed before it raised: the write is `unknown` in the journal, `outcome_unknown` to
    the model and `unknown` in its stop record, and a repeat is answered from the journal, not re-run."""
    invoices.fail_with = KeyError("boom")
    first = jr.call_sync("send_invoice", {"amount_rs": 1}, context=buyer)
    assert first.error is not None and first.error.error_class == "outcome_unknown"
    assert first.error.code == "FAILED_AFTER_DISPATCH" and "UNEXPECTED_EXCEPTION" in first.error.message
    invoices.fail_with = None
    again = jr.call_sync("send_invoice", {"amount_rs": 1}, context=buyer)
    assert again.error is not None and again.error.error_class == "outcome_unknown"
    assert again.error.idempotency_key == first.error.idempotency_key
    assert len(invoices.seen_keys) == 1
    assert [i.status for i in store.journal_list()] == ["unknown"]
    assert [s.effect_status for s in store.list_stops(limit=10)] == ["unknown"]


def test_a_partial_execution_is_replayed_verbatim(jr: toolproof.Runner, invoices: Invoices, buyer: Any) -> None:
    invoices.fail_with = toolproof.PartialExecution("sent, not filed", code="SENT_NOT_FILED", state={"sent": True})
    first = jr.call_sync("send_invoice", {"amount_rs": 1}, context=buyer)
    assert first.error is not None and first.error.code == "SENT_NOT_FILED"
    invoices.fail_with = None
    again = jr.call_sync("send_invoice", {"amount_rs": 1}, context=buyer)
    assert again.meta.replayed and again.error is not None and again.error.code == "SENT_NOT_FILED"
    assert len(invoices.seen_keys) == 1


@pytest.mark.e2e
def test_idempotent_write_timeout_releases_and_the_retry_resends_the_key(invoices: Invoices, buyer: Any) -> None:
    runner = toolproof.Runner(toolproof.Toolset(invoice_tools(invoices, idempotent=True)))
    invoices.lose_reply = True
    env = runner.call_sync("send_invoice", {"amount_rs": 9}, context=buyer)
    assert env.error is not None and env.error.idempotency_key == env.meta.idempotency_key
    assert runner.store.journal_list() == []
    invoices.lose_reply = False
    assert runner.call_sync("send_invoice", {"amount_rs": 9}, context=buyer).ok
    assert invoices.seen_keys[0] == invoices.seen_keys[1]  # the owner of the effect can dedupe on it


def test_secrets_are_redacted_in_the_journal(jr: toolproof.Runner, store: Store, buyer: Any) -> None:
    jr.call_sync("send_invoice", {"amount_rs": 3, "api_token": "sk-live-123"}, context=buyer)
    (intent,) = store.journal_list()
    assert intent.arguments["api_token"] == "[REDACTED]"
    assert "sk-live-123" not in repr(intent)


def test_dead_worker_intent_becomes_unknown_and_is_never_redispatched(
    jr: toolproof.Runner, store: Store, invoices: Invoices, buyer: Any
) -> None:
    from toolproof.journal._keys import key_parts_for

    tool = jr.toolset.get("send_invoice")
    args = {"amount_rs": 42}
    parts = key_parts_for(tool, args, buyer)
    # The dead worker's journal kept the runner's clock an hour behind: its lease ended long ago (no real sleep).
    dead = Journal(store, owner="dead-worker", lease_s=0.01, now=lambda: jr.clock.time() - 3600)
    store.journal_claim(dead.new_intent(tool, args, buyer, parts))
    env = jr.call_sync("send_invoice", args, context=buyer)
    assert env.error is not None and env.error.code == "OUTCOME_UNKNOWN" and env.error.idempotency_key == parts.key
    assert invoices.count() == 0 and invoices.seen_keys == []
    assert [i.key for i in jr.journal.list(status="unknown")] == [parts.key]


def test_in_flight_wait_bound_then_conflict(jr: toolproof.Runner, store: Store, buyer: Any) -> None:
    from toolproof.journal._keys import key_parts_for

    tool = jr.toolset.get("send_invoice")
    args = {"amount_rs": 5}
    parts = key_parts_for(tool, args, buyer)
    other = Journal(store, owner="other-worker", lease_s=60)
    store.journal_claim(other.new_intent(tool, args, buyer, parts))
    jr.journal = Journal(store, wait_s=0.05, poll_s=0.01)
    start = time.monotonic()
    env = jr.call_sync("send_invoice", args, context=buyer)
    assert 0.04 <= time.monotonic() - start < 2
    assert env.error is not None and env.error.error_class == "conflict" and env.error.code == "IN_FLIGHT"


async def test_in_flight_wait_then_replay(shop: Shop, buyer: Any) -> None:
    gate = asyncio.Event()
    calls = 0

    @toolproof.tool(effect="write")
    async def book_slot(slot: str, ctx: toolproof.CallContext) -> dict[str, str]:
        """Book one delivery slot.

        Args:
            slot: The slot name.
        """
        nonlocal calls
        calls += 1
        await gate.wait()
        return {"slot": slot, "key": ctx.idempotency_key or ""}

    runner = toolproof.Runner(toolproof.Toolset([book_slot]))
    first = asyncio.create_task(runner.call("book_slot", {"slot": "am"}, context=buyer))
    await asyncio.sleep(0.01)
    second = asyncio.create_task(runner.call("book_slot", {"slot": "am"}, context=buyer))
    await asyncio.sleep(0.05)
    gate.set()
    a, b = await first, await second
    assert a.ok and b.ok and b.meta.replayed and b.result == a.result and calls == 1


def test_journal_unreachable_refuses_the_write(tmp_path: Path, shop: Shop, buyer: Any) -> None:
    store = SqliteStore(tmp_path / "j.sqlite3")
    runner = toolproof.Runner(build_toolset(shop), store=store)
    store.close()  # the journal is gone: the write must not be sent blind
    env = runner.call_sync("place_order", ORDER, context=buyer)
    assert env.error is not None and env.error.code == "JOURNAL_UNAVAILABLE" and env.error.retryable
    assert shop.count_orders() == 0
    assert runner.call_sync("check_stock", {"crop": "onion"}, context=buyer).ok  # reads do not need it


def test_prune_keeps_unknown_and_recent(store: Store) -> None:
    now = [1_000_000.0]
    journal = Journal(store, now=lambda: now[0])
    tool = toolproof.Toolset(invoice_tools(Invoices(Path(":memory:")))).get("send_invoice")
    from toolproof.journal._keys import key_parts_for

    for i, status in enumerate(["done", "failed", "unknown"]):
        ctx = toolproof.CallContext(conversation_id=f"c{i}")
        intent = journal.new_intent(tool, {"amount_rs": i}, ctx, key_parts_for(tool, {"amount_rs": i}, ctx))
        store.journal_claim(intent)
        store.journal_finish(intent.key, journal.owner, status, None, now[0])  # type: ignore[arg-type]
    now[0] += 23 * 3600
    assert journal.prune() == 0  # kept at least 24 h by default
    now[0] += 2 * 3600
    assert journal.prune() == 2
    assert [i.status for i in journal.list()] == ["unknown"]
    with pytest.raises(ValueError, match=">= 0"):
        journal.prune(-1)


def test_bad_occurrence_is_a_clean_error(jr: toolproof.Runner, buyer: Any) -> None:
    env = jr.call_sync("place_order", ORDER, context=replace(buyer, occurrence=-1))
    assert env.error is not None and env.error.code == "BAD_OCCURRENCE" and env.meta.attempts == 0


@given(payload=st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=12))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_hostile_arguments_get_a_key_or_a_clean_invalid_argument(payload: Any, buyer: Any) -> None:
    @toolproof.tool(effect="write")
    def store_note(payload: Any, ctx: toolproof.CallContext) -> str:
        """Store one free-form note.

        Args:
            payload: Any JSON value.
        """
        return ctx.idempotency_key or ""

    runner = toolproof.Runner(toolproof.Toolset([store_note]))
    env = runner.call_sync("store_note", {"payload": payload}, context=buyer)
    if env.ok:
        assert env.result == env.meta.idempotency_key and env.result.startswith("tp1_")
        again = runner.call_sync("store_note", {"payload": payload}, context=buyer)
        assert again.meta.replayed and again.meta.idempotency_key == env.meta.idempotency_key
    else:
        assert env.error is not None and env.error.error_class == "invalid_argument", env.to_dict()


@pytest.mark.parametrize("value", [1e308, -1e308, 5e-324, "e\u0301" * 10_000, [[[[[[[[[[["deep"]]]]]]]]]]]])
def test_extreme_but_valid_values_get_stable_keys(value: Any, buyer: Any) -> None:
    @toolproof.tool(effect="write")
    def store_note(payload: Any, ctx: toolproof.CallContext) -> str:
        """Store one free-form note.

        Args:
            payload: Any JSON value.
        """
        return ctx.idempotency_key or ""

    a = toolproof.Runner(toolproof.Toolset([store_note])).call_sync("store_note", {"payload": value}, context=buyer)
    b = toolproof.Runner(toolproof.Toolset([store_note])).call_sync("store_note", {"payload": value}, context=buyer)
    assert a.ok and b.ok and a.result == b.result


def _dead_claim(store: Store, jr: toolproof.Runner, args: dict[str, Any], buyer: Any, owner: str) -> str:
    from toolproof.journal._keys import key_parts_for

    tool = jr.toolset.get("send_invoice")
    parts = key_parts_for(tool, args, buyer)
    an_hour_ago = jr.clock.time() - 3600  # the claim's lease ended long ago on the runner's clock: no real sleep
    store.journal_claim(Journal(store, owner=owner, lease_s=0.01, now=lambda: an_hour_ago).new_intent(
        tool, args, buyer, parts))
    return parts.key


def test_a_dead_workers_claim_gets_one_stop_record_from_racing_observers(
    jr: toolproof.Runner, store: Store, buyer: Any
) -> None:
    import threading

    key = _dead_claim(store, jr, {"amount_rs": 43}, buyer, "build-7:4242:ab12cd34")
    go = threading.Barrier(8)

    def observe(i: int) -> None:
        go.wait()
        if i % 2:
            jr.call_sync("send_invoice", {"amount_rs": 43}, context=buyer)
        else:
            Journal(store).list()

    threads = [threading.Thread(target=observe, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stops = [s for s in store.list_stops() if s.idempotency_key == key]
    assert len(stops) == 1 and stops[0].reason == "worker_lost" and stops[0].effect_status == "unknown"
    assert "pid 4242 on build-7" in stops[0].message and stops[0].extra["pid"] == 4242
    assert store.journal_get(key).status == "unknown"  # type: ignore[union-attr]
    jr.reconcile(key, "not_done")
    (stop,) = [s for s in store.list_stops(resolved=True) if s.idempotency_key == key]
    assert stop.effect_status == "not_done"


async def test_the_async_path_writes_the_dead_workers_stop_too(
    jr: toolproof.Runner, store: Store, buyer: Any
) -> None:
    key = _dead_claim(store, jr, {"amount_rs": 45}, buyer, "gone")
    env = await jr.call("send_invoice", {"amount_rs": 45}, context=buyer)
    assert env.error is not None and env.error.code == "OUTCOME_UNKNOWN"
    (stop,) = [s for s in store.list_stops() if s.idempotency_key == key]
    assert stop.code == "WORKER_LOST" and "gone" in stop.message and stop.extra["pid"] is None


def test_a_slow_worker_that_settles_after_its_lease_resolves_the_stop(buyer: Any, tmp_path: Path) -> None:
    """The worker was slow, not dead: it settles between the observer's stop record and its UPDATE. The record
    is resolved with what happened rather than left claiming an unknown outcome."""
    from toolproof.journal._keys import key_parts_for

    class SlowWorkerStore(SqliteStore):
        """A real SQLite store in which the slow worker's settlement lands right after the stop record."""

        settle: Any = None

        def add_stop_once(self, stop: Any) -> bool:
            added = super().add_stop_once(stop)
            if self.settle is not None:
                self.settle()
            return added

    store = SlowWorkerStore(tmp_path / "j.sqlite3")
    inv = Invoices(tmp_path / "inv.sqlite3")
    (tool,) = invoice_tools(inv)
    runner = toolproof.Runner(toolproof.Toolset([tool]), store=store, loop_guard=None)
    args = {"amount_rs": 47}
    slow = Journal(store, owner="slow:1:x", lease_s=0.01, now=lambda: runner.clock.time() - 3600)
    intent = slow.new_intent(tool, args, buyer, key_parts_for(tool, args, buyer))
    store.journal_claim(intent)
    store.settle = lambda: store.journal_finish(intent.key, intent.owner, "done", {"ok": True, "result": 1}, 0.0)
    env = runner.call_sync("send_invoice", args, context=buyer)
    assert env.ok and env.meta.replayed
    (stop,) = store.list_stops(resolved=True)
    assert stop.effect_status == "done" and "after its lease ran out: done" in (stop.resolution or "")
    runner.close()
    inv.db.close()


def test_settling_a_success_keeps_every_meta_field_and_adds_the_key() -> None:
    """`settle` builds the keyed envelope field by field (no `dataclasses.replace`): nothing may be lost."""
    from dataclasses import fields

    from toolproof.journal._journal import settle
    from toolproof.stores._intent import Intent

    assert [f.name for f in fields(toolproof.Meta)] == [
        "tool", "call_id", "schema_version", "attempts", "idempotency_key", "replayed", "extra"]
    assert [f.name for f in fields(toolproof.Envelope)] == ["ok", "meta", "result", "error"]
    tool = build_toolset(Shop()).get("place_order")
    meta = toolproof.Meta("place_order", "call-1", "v3", 2, None, True, {"fallback_from": "other"})
    intent = Intent(key="tp1_k", operation_id="k", tool="place_order", fingerprint="f", arguments={},
                    status="in_flight", created_at=0.0, updated_at=0.0, owner="me", lease_until=1.0)
    for envelope, how in ((toolproof.Envelope.success({"id": 7}, meta), "done"),
                          (toolproof.Envelope.failure(toolproof.NotFound("No such crop.", code="NO_CROP"), meta),
                           "release")):
        settled, final = settle(intent, tool, envelope)
        assert settled == how
        assert final == replace(envelope, meta=replace(meta, idempotency_key="tp1_k"))
