"""The in-memory store stays bounded: finished intents and stop records are dropped oldest first past a count
and a size; an in-flight or unknown intent is never dropped. Memory measured with tracemalloc over real
writes and give-ups through a Runner."""

from __future__ import annotations

import dataclasses
import logging
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from tests.stores.test_intent import full_intent
from toolproof import CallContext, Runner, Tool, Toolset
from toolproof.contract._errors import PermissionDenied
from toolproof.stores import MemoryStore
from toolproof.stores._records import StopRecord

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}, "note": {"type": "string"}},
          "required": ["n"], "additionalProperties": False}
MB = 1024 * 1024


def write_tool(handler: Callable[..., Any]) -> Tool:
    return Tool.from_schema("place_order", "Place an order.", SCHEMA, handler, effect="write", idempotent=False)


def growth(run: Callable[[], None]) -> int:
    """Bytes still allocated after `run` (tracemalloc), the store included."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_20k_writes_keep_the_journal_bounded() -> None:
    store = MemoryStore(max_intents=1_000)
    r = Runner(Toolset([write_tool(lambda args, ctx: {"order": args["n"], "lines": ["x" * 200] * 3})]),
               store=store, audit=False)
    ctx = CallContext(conversation_id="c1")

    def run() -> None:
        for n in range(20_000):
            assert r.call_sync("place_order", {"n": n, "note": "y" * 300}, context=ctx).ok

    grown = growth(run)
    assert grown < 8 * MB, f"{grown / MB:.1f} MB for 1,000 kept intents"
    assert len(store.journal_list(limit=100_000)) == 1_000
    # The newest are kept (a resend of them is still replayed), the oldest were dropped.
    assert r.call_sync("place_order", {"n": 19_999, "note": "y" * 300}, context=ctx).meta.replayed


def test_20k_give_ups_keep_the_stop_records_bounded(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)

    def refuse(args: dict[str, Any], ctx: CallContext) -> Any:
        raise PermissionDenied("The price list is closed to this account: " + "z" * 1_000, code="CLOSED")

    store = MemoryStore(max_stops=1_000)
    read = Tool.from_schema("get_price", "Read a price.", SCHEMA, refuse, effect="read")
    r = Runner(Toolset([read]), store=store, audit=False, loop_guard=None)

    def run() -> None:
        for n in range(20_000):
            env = r.call_sync("get_price", {"n": n, "note": "y" * 300})
            assert env.meta.extra["stop_id"]

    grown = growth(run)
    assert len(store.list_stops(limit=100_000)) == 1_000
    assert grown < 16 * MB, f"{grown / MB:.1f} MB for 1,000 kept stop records"


def test_the_size_bound_drops_finished_intents_oldest_first_never_in_flight_or_unknown() -> None:
    store = MemoryStore(max_intent_bytes=200_000)  # each intent below carries ~100 KB of arguments
    store.journal_claim(full_intent(key="flying", operation_id="op-flying"))
    store.journal_claim(full_intent(key="lost", operation_id="op-lost"))
    assert store.journal_finish("lost", "worker ☃ 1", "unknown", None, 1.0)
    for i in range(10):
        key = f"k{i}"
        store.journal_claim(full_intent(key=key, operation_id=f"op{i}"))
        assert store.journal_finish(key, "worker ☃ 1", "done", {"result": i}, 2.0 + i)
    kept = {i.key for i in store.journal_list(limit=100)}
    assert {"flying", "lost", "k9"} <= kept
    assert "k0" not in kept and store.journal_for_operation("op0") is None
    assert len(kept) < 6


def test_the_count_bound_drops_resolved_stops_before_open_ones() -> None:
    store = MemoryStore(max_stops=3)
    base = StopRecord(id="s0", at=0.0, tool="t", call_id="c", arguments={}, error_class="outcome_unknown",
                      code="X", message="m", attempts=1, effect_status="unknown", reason="outcome_unknown")
    for i in range(3):
        store.add_stop(dataclasses.replace(base, id=f"s{i}", at=float(i)))
    store.resolve_stop("s2", resolution="checked")
    store.add_stop(dataclasses.replace(base, id="s3", at=3.0))
    assert {s.id for s in store.list_stops()} == {"s0", "s1", "s3"}  # the resolved one went first
    store.add_stop(dataclasses.replace(base, id="s4", at=4.0))
    assert {s.id for s in store.list_stops()} == {"s1", "s3", "s4"}  # then the oldest


def test_the_bounds_are_checked() -> None:
    with pytest.raises(ValueError):
        MemoryStore(max_intents=0)


def test_audit_records_are_bounded_by_bytes_as_well_as_by_count() -> None:
    def lookup(args: dict[str, Any], ctx: CallContext) -> dict[str, int]:
        return {"n": args["n"]}

    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "note": {"type": "string"}},
              "required": ["n"], "additionalProperties": False}
    tool = Tool.from_schema("lookup", "Look up.", schema, lookup, effect="read")
    store = MemoryStore(max_audit_bytes=8 * MB)  # the count bound (100,000) is far away
    runner = Runner(Toolset([tool]), store=store)

    def run() -> None:
        for i in range(400):  # 36 MB of arguments, each call's own string
            assert runner.call_sync("lookup", {"n": i, "note": f"{i}" + "x" * 90_000}).ok

    grown = growth(run)
    kept = store.list_audit(limit=1000)
    assert 50 < len(kept) < 100 and kept[0].arguments["n"] == 399  # the newest kept, the oldest dropped
    assert grown < 14 * MB, grown / MB
    runner.close()
