"""The approval gate: a gated call does not run until a person approves it, then runs exactly once."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from pathlib import Path

import pytest

import toolproof
from tests.approvals._tools import LIMIT_RS, gated_wholesaler, payments, running
from tests.conftest import TODAY
from toolproof.approvals import AlreadyDecided, ApprovalNotFound, approve, decide, deny
from toolproof.contract._errors import DefinitionError
from toolproof.examples.wholesaler import Shop
from toolproof.pipeline import Clock
from toolproof.stores import Store

SECRET = "tok-5ecret-0123456789"
BIG = {"amount_rs": 50_000, "to": "Kisan Co-op", "api_token": SECRET}
ctx = toolproof.CallContext(conversation_id="c-1", principal="buyer-7")


def gated(runner: toolproof.Runner, args: dict[str, object] = BIG) -> tuple[toolproof.Envelope, str]:
    envelope = runner.call_sync("pay", args, context=ctx)
    assert not envelope.ok and envelope.error is not None
    return envelope, str(envelope.meta.extra["approval_id"])


def test_a_gated_call_does_not_run_and_the_model_is_told_to_ask_a_person(store: Store) -> None:
    paid: list[int] = []
    with running(payments(paid), store) as runner:
        envelope, request_id = gated(runner)
        error = envelope.error
        assert error is not None
        assert (error.code, error.error_class.value, error.next_action.value, error.retryable) == (
            "APPROVAL_REQUIRED", "needs_clarification", "ask_person", False)
        assert "not run" in error.message and "Do not retry, rephrase" in (error.hint or "")
        assert error.state is not None and error.state["status"] == "pending"
        assert str(LIMIT_RS) in error.state["reason"]
        assert paid == []
        again, same_id = gated(runner)  # asking again finds the same request: no second one
        assert same_id == request_id and again.error is not None and again.error.code == "APPROVAL_REQUIRED"
        runner.flush()
    request = store.approval_get(request_id)
    assert request is not None and request.status == "pending"
    assert (request.tool, request.principal, request.conversation_id) == ("pay", "buyer-7", "c-1")
    assert request.idempotency_key == envelope.meta.idempotency_key and request.idempotency_key
    assert request.arguments["amount_rs"] == 50_000 and SECRET not in repr(request)
    assert request.expires_at > request.at
    assert len(store.approval_list()) == 1
    assert [r.outcome for r in store.list_audit(tool="pay")] == ["approval_pending", "approval_pending"]


def test_approved_the_same_call_runs_exactly_once(store: Store) -> None:
    paid: list[int] = []
    with running(payments(paid), store) as runner:
        envelope, request_id = gated(runner)
        decided = approve(store, request_id, by="alice", note="checked the invoice")
        assert (decided.status, decided.decided_by, decided.note) == ("approved", "alice", "checked the invoice")
        first = runner.call_sync("pay", BIG, context=ctx)
        second = runner.call_sync("pay", BIG, context=ctx)
        runner.flush()
    assert first.ok and first.result == {"paid_rs": 50_000, "to": "Kisan Co-op"}
    assert second.ok and second.meta.replayed
    assert paid == [50_000]
    assert first.meta.idempotency_key == envelope.meta.idempotency_key
    decisions = [r for r in store.list_audit(tool="pay") if r.outcome == "approval_approved"]
    assert len(decisions) == 1 and decisions[0].principal == "alice"
    assert decisions[0].arguments["note"] == "checked the invoice"
    assert decisions[0].idempotency_key == envelope.meta.idempotency_key


def test_changed_arguments_need_a_new_approval(store: Store) -> None:
    paid: list[int] = []
    with running(payments(paid), store) as runner:
        _, request_id = gated(runner)
        approve(store, request_id, by="alice")
        changed, other_id = gated(runner, {**BIG, "amount_rs": 90_000})
        assert other_id != request_id and changed.error is not None and changed.error.code == "APPROVAL_REQUIRED"
    assert paid == []


def test_denied_the_call_never_runs_and_the_refusal_says_who_and_why(store: Store) -> None:
    paid: list[int] = []
    with running(payments(paid), store) as runner:
        _, request_id = gated(runner)
        deny(store, request_id, by="bob", note="supplier not on the list")
        for _ in range(2):
            refused = runner.call_sync("pay", BIG, context=ctx)
            assert refused.error is not None
            assert (refused.error.code, refused.error.error_class.value) == ("APPROVAL_DENIED", "permission_denied")
            assert "bob denied" in refused.error.message and "supplier not on the list" in refused.error.message
    assert paid == []


def test_expired_requests_are_refused_and_cannot_be_approved_late(store: Store) -> None:
    """On the runner's clock (a fake wall clock here: no real sleep), past its expiry a request is refused."""
    paid: list[int] = []
    wall = [time.time()]
    runner = toolproof.Runner(payments(paid), store=store, clock=Clock(time=lambda: wall[0]), approval_ttl_s=60.0)
    try:
        _, request_id = gated(runner)
        wall[0] += 61.0
        refused = runner.call_sync("pay", BIG, context=ctx)
        assert refused.error is not None and refused.error.code == "APPROVAL_EXPIRED"
        with pytest.raises(AlreadyDecided, match="expired"):
            decide(store, request_id, approve=True, by="alice", now=wall[0])
    finally:
        runner.flush()
    assert paid == []


def test_a_decision_taken_twice_is_applied_once_and_names_the_first(store: Store) -> None:
    with running(payments([]), store) as runner:
        _, request_id = gated(runner)
    results: list[str] = []
    barrier = threading.Barrier(4)

    def operator(name: str, yes: bool) -> None:
        barrier.wait()
        try:
            decide(store, request_id, approve=yes, by=name, note=name)
            results.append("applied")
        except AlreadyDecided as exc:
            results.append(str(exc))

    threads = [threading.Thread(target=operator, args=(f"op{i}", i % 2 == 0)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("applied") == 1
    winner = store.approval_get(request_id)
    assert winner is not None and winner.decided_by is not None
    assert all(f"by {winner.decided_by}" in r for r in results if r != "applied")
    assert len([r for r in store.list_audit(tool="pay") if r.outcome in ("approval_approved", "approval_denied")]) == 1
    with pytest.raises(ApprovalNotFound):
        approve(store, "apr_none", by="x")


def test_small_amounts_pass_without_a_request_and_a_broken_policy_fails_closed(store: Store) -> None:
    paid: list[int] = []

    def broken(arguments: object, context: object) -> str:
        raise KeyError("oops")

    with running(payments(paid), store) as runner:
        assert runner.call_sync("pay", {**BIG, "amount_rs": 500}, context=ctx).ok
        assert store.approval_list() == []
    with running(toolproof.Toolset([t.with_approval(broken) for t in payments(paid)]), store) as r:
        envelope, _ = gated(r, {**BIG, "amount_rs": 7})
        assert envelope.error is not None and "KeyError" in envelope.error.message
    assert paid == [500]


@pytest.mark.parametrize("store", ["memory"], indirect=True)
def test_the_agent_waits_for_the_decision_then_the_call_runs_once(store: Store) -> None:
    paid: list[int] = []

    async def agent(runner: toolproof.Runner) -> toolproof.Envelope:
        envelope = await runner.call("pay", BIG, context=ctx)
        assert envelope.error is not None and envelope.error.code == "APPROVAL_REQUIRED"
        threading.Timer(0.2, approve, args=(store, envelope.meta.extra["approval_id"]), kwargs={"by": "carol"}).start()
        decided = await runner.wait_for_approval(envelope, timeout_s=10, poll_s=0.02)
        assert (decided.status, decided.decided_by) == ("approved", "carol")
        return await runner.call("pay", BIG, context=ctx)

    with running(payments(paid), store) as runner:
        # On its own thread: a session's Playwright keeps an event loop running on the main one.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            assert pool.submit(asyncio.run, agent(runner)).result().ok
        pending, other = gated(runner, {**BIG, "amount_rs": 12_345})
        assert pending.meta.extra["approval_id"] == other
        waited = runner.wait_for_approval_sync(other, timeout_s=0.1, poll_s=0.02)
        assert waited.status == "pending"
    assert paid == [50_000]


def test_approval_changes_neither_schema_nor_fingerprint() -> None:
    plain = next(iter(payments([]))).with_approval(None)
    gated_tool = plain.with_approval("always")
    assert gated_tool.input_schema == plain.input_schema
    assert gated_tool.schema_version == plain.schema_version
    assert gated_tool.approval == "always" and plain.approval is None
    with pytest.raises(DefinitionError, match="approval must be"):
        plain.with_approval("sometimes")  # type: ignore[arg-type]


def test_never_and_always() -> None:
    paid: list[int] = []
    tool = next(iter(payments(paid)))
    with toolproof.Runner(toolproof.Toolset([tool.with_approval("never")])) as runner:
        assert runner.call_sync("pay", BIG, context=ctx).ok
    with toolproof.Runner(toolproof.Toolset([tool.with_approval("always")])) as runner:
        envelope, _ = gated(runner, {**BIG, "amount_rs": 1})
        assert envelope.error is not None and "always" in envelope.error.message
    assert paid == [50_000]


def test_the_wholesaler_places_a_large_order_once_after_approval(tmp_path: Path, store: Store) -> None:
    shop = Shop(tmp_path / "orders.sqlite3", today=lambda: TODAY)
    order = {"crop": "onion", "quantity_kg": 1200, "delivery_date": "2026-10-22"}
    buyer = toolproof.CallContext(conversation_id="chat-1", principal="B-17")
    with running(gated_wholesaler(shop), store) as runner:
        other_chat = toolproof.CallContext(conversation_id="chat-0", principal="B-17")
        small = runner.call_sync("place_order", {**order, "quantity_kg": 100}, context=other_chat)
        assert small.ok and shop.count_orders() == 1
        waiting = runner.call_sync("place_order", order, context=buyer)
        assert waiting.error is not None and waiting.error.code == "APPROVAL_REQUIRED"
        assert shop.count_orders() == 1
        approve(store, str(waiting.meta.extra["approval_id"]), by="ops")
        assert runner.call_sync("place_order", order, context=buyer).ok
        assert runner.call_sync("place_order", order, context=buyer).meta.replayed
    assert shop.count_orders() == 2
    shop.close()
