"""Audit and stop records: plain values that every store keeps and gives back exactly, hostile content too."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from toolproof.stores import Store
from toolproof.stores._records import AuditRecord, StopRecord

from .test_intent import HOSTILE


def full_audit(i: int = 0, **changes: Any) -> AuditRecord:
    """An audit record with every field set, the optional ones too."""
    base = AuditRecord(at=1_760_000_000.000123 + i, call_id=f"call-{i}-'\"", tool="place_order ☃",
                       schema_version="sha256:" + "a" * 64, arguments=HOSTILE, validation="failed", attempt=3,
                       latency_ms=0.000001, outcome="error", run_id="run-'; --", conversation_id="chat-\u202e",
                       principal="B-17", failing_fields=("quantity_kg", "/items/0/crop", "fi\u0301eld"),
                       error_class="invalid_argument", code="WRONG_TYPE", idempotency_key="k" * 64,
                       exception_type="app.errors.Boom", exception_message=HOSTILE["sql"],
                       traceback="Traceback (most recent call last):\n  " + HOSTILE["unicode"])
    return dataclasses.replace(base, **changes)


def full_stop(i: int = 0, **changes: Any) -> StopRecord:
    """A stop record with every field set, `extra` nested and hostile."""
    base = StopRecord(id=f"stop-{i}-\"'", at=1_760_000_100.5 + i, tool="send_payment", call_id=f"call-{i}",
                      arguments=HOSTILE, error_class="outcome_unknown", code="TIMEOUT_AFTER_DISPATCH",
                      message=HOSTILE["sql"] + " " + HOSTILE["unicode"], attempts=2, effect_status="unknown",
                      reason="outcome_unknown", run_id="run-1", conversation_id="chat-1", idempotency_key="key-1",
                      extra={"fallback_from": "x", "state": {"deep": HOSTILE["deep"], "n": HOSTILE["big_int"]}},
                      exception_type="TimeoutError", exception_message="", traceback="Traceback\n" + HOSTILE["sql"])
    return dataclasses.replace(base, **changes)


def test_records_are_frozen_and_stop_extras_are_not_shared() -> None:
    audit, stop = full_audit(), full_stop()
    with pytest.raises(dataclasses.FrozenInstanceError):
        audit.outcome = "ok"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        stop.resolution = "done"  # type: ignore[misc]
    bare = [StopRecord(id=f"s{n}", at=0.0, tool="t", call_id="c", arguments={}, error_class="internal_error",
                       code="X", message="m", attempts=1, effect_status="not_done", reason="non_retryable")
            for n in range(2)]
    bare[0].extra["mutated"] = True
    assert bare[1].extra == {}


def test_an_audit_record_with_every_field_round_trips(store: Store) -> None:
    records = [full_audit(0), full_audit(1, validation="ok", failing_fields=(), error_class=None, code=None,
                                         run_id=None, conversation_id=None, principal=None, schema_version=None,
                                         idempotency_key=None, outcome="ok", arguments=None)]
    store.append_audit(records)
    got = store.list_audit(limit=10)
    assert got == records[::-1]
    assert isinstance(got[1].failing_fields, tuple)


def test_a_stop_record_with_every_field_round_trips(store: Store) -> None:
    stop = full_stop()
    store.add_stop(stop)
    assert store.get_stop(stop.id) == stop
    assert store.list_stops(resolved=False) == [stop]


def test_resolving_a_stop_keeps_every_other_field(store: Store) -> None:
    stop = full_stop()
    store.add_stop(stop)
    resolved = store.resolve_stop(stop.id, resolution=HOSTILE["sql"] + HOSTILE["unicode"], effect_status="done")
    assert resolved is not None and resolved.resolved_at is not None
    expected = dataclasses.replace(stop, resolution=HOSTILE["sql"] + HOSTILE["unicode"], effect_status="done",
                                   resolved_at=resolved.resolved_at)
    assert resolved == expected == store.get_stop(stop.id)
    assert store.list_stops(resolved=False) == [] and store.list_stops(resolved=True) == [expected]


def test_ids_that_look_like_sql_or_differ_in_normal_form_are_kept_apart(store: Store) -> None:
    ids = ["caf\u00e9", "cafe\u0301", "CAF\u00c9", "' OR '1'='1", "%", "_"]
    for n, stop_id in enumerate(ids):
        store.add_stop(full_stop(n, id=stop_id))
    assert {s.id for s in store.list_stops()} == set(ids)
    assert store.get_stop("' OR '1'='1") == full_stop(3, id="' OR '1'='1")
    assert store.get_stop("caf%") is None
    assert store.resolve_stop("nope", resolution="x") is None


def test_records_of_one_call_are_found_by_its_id(store: Store) -> None:
    store.append_audit([full_audit(0), full_audit(1), full_audit(2, call_id="call-0-'\"", attempt=4)])
    for n in range(3):
        store.add_stop(full_stop(n, call_id=f"call-{n % 2}"))
    store.resolve_stop("stop-2-\"'", resolution="checked")
    assert [r.attempt for r in store.list_audit(call_id="call-0-'\"")] == [4, 3]
    assert store.list_audit(call_id="call-0") == [] and len(store.list_audit(call_id="%")) == 0
    assert [s.id for s in store.list_stops(call_id="call-0")] == ["stop-2-\"'", "stop-0-\"'"]
    assert [s.id for s in store.list_stops(call_id="call-0", resolved=False)] == ["stop-0-\"'"]
    assert [s.id for s in store.list_stops(call_id="call-0", resolved=True)] == ["stop-2-\"'"]
    assert len(store.list_stops(resolved=False)) == 2
