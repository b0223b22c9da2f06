"""The Store contract, run against every store: audit, stop records and the write journal."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import pytest

from toolproof.stores import Store
from toolproof.stores._intent import Intent
from toolproof.stores._records import AuditRecord, StopRecord


def _intent(key: str = "k1", op: str = "op1", **changes: Any) -> Intent:
    now = time.time()
    base = Intent(key=key, operation_id=op, tool="place_order", fingerprint="f1",
                  arguments={"crop": "jeera", "note": "naïve ☃"}, status="in_flight", created_at=now,
                  updated_at=now, owner="w1", lease_until=now + 60, call_id="c1", conversation_id="chat",
                  principal="B-17")
    return replace(base, **changes)


def _audit(i: int, **changes: Any) -> AuditRecord:
    rec = AuditRecord(at=1000.0 + i, call_id=f"c{i}", tool="place_order" if i % 2 else "check_stock",
                      schema_version="v1", arguments={"i": i}, validation="ok", attempt=1, latency_ms=1.5,
                      outcome="ok")
    return replace(rec, **changes)


def _stop(i: int, key: str | None = None) -> StopRecord:
    return StopRecord(id=f"s{i}", at=2000.0 + i, tool="place_order", call_id=f"c{i}", arguments={"i": i},
                      error_class="outcome_unknown", code="TIMEOUT_AFTER_DISPATCH", message="m", attempts=1,
                      effect_status="unknown", reason="outcome_unknown", idempotency_key=key, extra={"x": [1]})


# --- audit ---------------------------------------------------------------------------------------------------


def test_audit_newest_first_filter_and_limit(store: Store) -> None:
    store.append_audit([_audit(i) for i in range(5)])
    store.append_audit([])
    rows = store.list_audit(limit=10)
    assert [r.call_id for r in rows] == ["c4", "c3", "c2", "c1", "c0"]
    assert rows[0] == _audit(4)
    assert [r.call_id for r in store.list_audit(tool="place_order")] == ["c3", "c1"]
    assert len(store.list_audit(limit=2)) == 2


def test_field_failures_counted(store: Store) -> None:
    store.append_audit([
        _audit(1, validation="failed", failing_fields=("quantity_kg",)),
        _audit(3, validation="failed", failing_fields=("quantity_kg", "crop")),
        _audit(5, validation="failed"),
    ])
    got = {(t, f): n for t, f, _, n in store.field_failures()}
    assert got == {("place_order", "quantity_kg"): 2, ("place_order", "crop"): 1, ("place_order", "<arguments>"): 1}


# --- stops -------------------------------------------------------------------------------------------------------


def test_stops_add_list_get_resolve(store: Store) -> None:
    for i in range(3):
        store.add_stop(_stop(i, key="K" if i else None))
    assert [s.id for s in store.list_stops()] == ["s2", "s1", "s0"]
    assert store.get_stop("s1") == _stop(1, key="K")
    assert store.get_stop("nope") is None
    resolved = store.resolve_stop("s0", resolution="checked", effect_status="done")
    assert resolved is not None and resolved.resolution == "checked" and resolved.effect_status == "done"
    assert resolved.resolved_at is not None
    assert [s.id for s in store.list_stops(resolved=True)] == ["s0"]
    assert store.resolve_stop("nope", resolution="x") is None
    assert store.resolve_stops_for_key("K", resolution="reconciled", effect_status="not_done") == 2
    assert store.list_stops(resolved=False) == []
    s1 = store.get_stop("s1")
    assert s1 is not None and s1.effect_status == "not_done"


# --- journal -----------------------------------------------------------------------------------------------------


def test_claim_is_exclusive_by_key_and_by_operation(store: Store) -> None:
    mine = _intent()
    assert store.journal_claim(mine)
    assert not store.journal_claim(replace(mine, owner="w2"))
    assert not store.journal_claim(_intent(key="k2"))  # same operation, other key
    assert store.journal_claim(_intent(key="k3", op="op3"))
    assert store.journal_get("k1") == mine
    assert store.journal_for_operation("op1") == mine
    assert store.journal_get("k2") is None


def test_finish_only_by_owner_and_only_once(store: Store) -> None:
    store.journal_claim(_intent())
    assert not store.journal_finish("k1", "w2", "done", {"ok": True}, 5.0)
    assert store.journal_finish("k1", "w1", "done", {"ok": True, "result": {"id": 7}}, 5.0)
    assert not store.journal_finish("k1", "w1", "failed", None, 6.0)
    row = store.journal_get("k1")
    assert row is not None and row.status == "done" and row.outcome == {"ok": True, "result": {"id": 7}}
    assert row.updated_at == 5.0


def test_release_frees_key_and_operation(store: Store) -> None:
    store.journal_claim(_intent())
    assert not store.journal_release("k1", "w2")
    assert store.journal_release("k1", "w1")
    assert store.journal_get("k1") is None
    assert store.journal_claim(_intent(key="k2"))  # the operation is free again


def test_expired_lease_becomes_unknown(store: Store) -> None:
    now = time.time()
    store.journal_claim(_intent(lease_until=now - 1))
    store.journal_claim(_intent(key="k2", op="op2", lease_until=now + 60))
    assert store.journal_expire(now, "k2") == 0
    assert store.journal_expire(now) == 1
    row = store.journal_get("k1")
    assert row is not None and row.status == "unknown"
    assert not store.journal_finish("k1", "w1", "done", None, now)  # the dead worker cannot settle it
    assert [i.key for i in store.journal_list(status="unknown")] == ["k1"]


def test_renew_only_by_owner_while_running(store: Store) -> None:
    now = time.time()
    store.journal_claim(_intent(lease_until=now + 1))
    assert store.journal_renew("k1", "w1", now + 30)
    assert not store.journal_renew("k1", "someone-else", now + 60)
    row = store.journal_get("k1")
    assert row is not None and row.lease_until == pytest.approx(now + 30)
    store.journal_expire(now + 31)  # its worker stopped renewing: unknown, and still renewable by its owner
    assert store.journal_renew("k1", "w1", now + 90)  # (an attempt that outlived its time limit runs on)
    store.journal_claim(_intent(key="k2", op="op2"))
    store.journal_finish("k2", "w1", "done", None, now)
    assert not store.journal_renew("k2", "w1", now + 30)  # settled: nothing to keep alive
    assert not store.journal_renew("missing", "w1", now + 30)


def test_resolve_done_and_not_done(store: Store) -> None:
    store.journal_claim(_intent())
    store.journal_claim(_intent(key="k2", op="op2"))
    done = store.journal_resolve("k1", done=True, outcome={"ok": True, "result": 1}, resolution="r", now=9.0)
    assert done is not None and done.status == "done" and done.resolution == "r" and done.outcome["result"] == 1
    gone = store.journal_resolve("k2", done=False, outcome=None, resolution="nd", now=9.0)
    assert gone is not None and gone.resolution == "nd"
    assert store.journal_get("k2") is None
    assert store.journal_resolve("missing", done=True, outcome=None, resolution="r", now=9.0) is None


def test_list_and_prune(store: Store) -> None:
    for i in range(4):
        store.journal_claim(_intent(key=f"k{i}", op=f"op{i}", created_at=100.0 + i))
    store.journal_finish("k0", "w1", "done", None, 10.0)
    store.journal_finish("k1", "w1", "failed", None, 10.0)
    store.journal_finish("k2", "w1", "unknown", None, 10.0)
    assert [i.key for i in store.journal_list()] == ["k3", "k2", "k1", "k0"]
    assert [i.key for i in store.journal_list(status="done")] == ["k0"]
    assert len(store.journal_list(limit=2)) == 2
    assert store.journal_prune(before=11.0) == 2  # done and failed only; unknown and in-flight stay
    assert sorted(i.key for i in store.journal_list()) == ["k2", "k3"]


def test_arguments_and_outcome_round_trip_unicode(store: Store) -> None:
    args = {"note": "e\u0301 ☃ \U0001f600", "nested": {"a": [1, 2.5, None, True]}}
    store.journal_claim(_intent(arguments=args))
    store.journal_finish("k1", "w1", "done", {"ok": True, "result": args}, 1.0)
    row = store.journal_get("k1")
    assert row is not None and row.arguments == args and row.outcome["result"] == args


async def test_async_claims_race_one_winner(store: Store) -> None:
    try:
        wins = await asyncio.gather(*[store.ajournal_claim(_intent(owner=f"w{i}")) for i in range(20)])
        assert sum(wins) == 1
        found = await store.ajournal_get("k1")
        assert found is not None and await store.ajournal_for_operation("op1") == found
        assert await store.ajournal_finish("k1", found.owner, "done", {"ok": True}, 1.0)
        assert await store.ajournal_expire(time.time()) == 0
        assert not await store.ajournal_release("k1", found.owner)
    finally:
        await store.aclose()
