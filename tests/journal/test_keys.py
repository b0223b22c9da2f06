"""Idempotency keys: stable for equal values, different for different ones, never a crash."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolproof
from toolproof.contract._canonical import canonical_json
from toolproof.journal._keys import KEY_PREFIX, idempotency_key, key_parts

CTX = toolproof.CallContext(conversation_id="chat-8812", principal="B-17")
ORDER = {"crop": "groundnut", "quantity_kg": 40, "delivery_date": "2026-10-23"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def test_huge_values_get_stable_keys() -> None:
    huge = {"note": "x" * 5_000_000, "items": list(range(100_000))}
    assert idempotency_key("t", huge, CTX) == idempotency_key("t", dict(reversed(list(huge.items()))), CTX)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=5))
@settings(max_examples=100, deadline=None)
def test_key_ignores_key_order(args: dict[str, Any]) -> None:
    try:
        canonical_json(args)
    except toolproof.InvalidArgument:
        return
    reordered = dict(reversed(list(args.items())))
    assert idempotency_key("tool", args, CTX) == idempotency_key("tool", reordered, CTX)


def test_key_shape_and_what_it_depends_on() -> None:
    key = idempotency_key("place_order", ORDER, CTX)
    assert key.startswith(KEY_PREFIX) and len(key) == len(KEY_PREFIX) + 64
    assert key == idempotency_key("place_order", {**ORDER, "quantity_kg": 40.0}, CTX)
    others = {
        idempotency_key("place_order", {**ORDER, "quantity_kg": 400}, CTX),
        idempotency_key("cancel_order", ORDER, CTX),
        idempotency_key("place_order", ORDER, CTX.with_updates(conversation_id="chat-2")),
        idempotency_key("place_order", ORDER, CTX.with_updates(principal="B-18")),
        idempotency_key("place_order", ORDER, CTX.with_updates(occurrence=1)),
    }
    assert key not in others and len(others) == 5


def test_model_or_caller_supplied_key_is_ignored() -> None:
    supplied = CTX.with_updates(idempotency_key="model-made-this-up", call_id="x", run_id="r", attempt=3)
    assert idempotency_key("place_order", ORDER, supplied) == idempotency_key("place_order", ORDER, CTX)


def test_operation_keys_select_the_arguments() -> None:
    a = key_parts("send", {"to": "B-17", "note": "hi"}, CTX, operation_keys=["to"])
    b = key_parts("send", {"to": "B-17", "note": "hello"}, CTX, operation_keys=["to"])
    assert a.key == b.key and a.operation_id == b.operation_id and a.fingerprint != b.fingerprint
    c = key_parts("send", {"to": "B-18", "note": "hi"}, CTX, operation_keys=["to"])
    # Other operation arguments: another operation (one order per crop and day, not one per conversation).
    assert c.key != a.key and c.operation_id != a.operation_id
    # an absent optional operation argument is null
    assert key_parts("send", {}, CTX, operation_keys=["to"]).key == key_parts("send", {"to": None}, CTX,
                                                                              operation_keys=["to"]).key


@pytest.mark.parametrize("occurrence", [-1, True, 1.5, "1"])
def test_bad_occurrence(occurrence: Any) -> None:
    with pytest.raises(toolproof.InvalidArgument) as info:
        idempotency_key("t", {}, CTX.with_updates(occurrence=occurrence))
    assert info.value.code == "BAD_OCCURRENCE"


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(toolproof.InvalidArgument):
        idempotency_key("t", [1, 2], CTX)  # type: ignore[arg-type]


def test_defaults_applied_before_keying(runner: toolproof.Runner) -> None:
    from toolproof.journal._keys import key_parts_for

    tool = runner.toolset.get("place_order")
    assert key_parts_for(tool, ORDER, CTX) == key_parts_for(tool, {**ORDER, "grade": "A"}, CTX)
    assert key_parts_for(tool, ORDER, CTX) != key_parts_for(tool, {**ORDER, "grade": "B"}, CTX)
    assert math.isfinite(1.0)
