"""The journal's row, `Intent`: a plain value that every store gives back exactly as it was claimed."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest

from toolproof.stores import Store
from toolproof.stores._intent import INTENT_STATUSES, Intent, IntentStatus

#: Values a model or a tool can put into arguments and outcomes: quoting, SQL, Unicode edge cases, numbers at
#: the limits of their types, deep and empty containers.
HOSTILE: dict[str, Any] = {
    "sql": "'); DROP TABLE journal; --",
    "quotes": "\"' \\ ` $1 %s ?",
    "unicode": "e\u0301 \u202e \ufeff \U0001f600 \u00a0",
    "surrogate_free_astral": "\U0010ffff",
    "big_int": 2**63 + 1,
    "neg_big_int": -(2**64),
    "float": 1.7976931348623157e308,
    "tiny": 5e-324,
    "neg_zero": -0.0,
    "empty": ["", {}, []],
    "deep": [[[[[[[[[[[[[[[[[[[[["bottom"]]]]]]]]]]]]]]]]]]]]],
    "many_keys": {f"k{i}": i for i in range(500)},
    "long": "x" * 100_000,
}


def full_intent(**changes: Any) -> Intent:
    """An intent with every field set, the optional ones too."""
    base = Intent(key="key-'\"-1", operation_id="op;--1", tool="place_order", fingerprint="f" * 64,
                  arguments=HOSTILE, status="in_flight", created_at=1_760_000_000.123456, updated_at=1_760_000_000.5,
                  owner="worker ☃ 1", lease_until=1_760_000_060.25, call_id="c-1", conversation_id="chat-ü",
                  principal="B-17", outcome=None, resolution=None)
    return dataclasses.replace(base, **changes)


def test_statuses_are_the_declared_ones() -> None:
    assert typing.get_args(IntentStatus) == INTENT_STATUSES


def test_to_dict_names_every_field_and_rebuilds_the_same_intent() -> None:
    intent = full_intent(outcome={"result": [1]}, resolution="checked by a person")
    data = intent.to_dict()
    assert list(data) == [f.name for f in dataclasses.fields(Intent)]
    assert Intent(**data) == intent
    data["arguments"] = "changed"
    assert intent.arguments is HOSTILE  # the dict is a copy of the fields, not a view


def test_an_intent_is_frozen() -> None:
    intent = full_intent()
    with pytest.raises(dataclasses.FrozenInstanceError):
        intent.status = "done"  # type: ignore[misc]


def test_every_field_round_trips_through_the_store(store: Store) -> None:
    intent = full_intent()
    assert store.journal_claim(intent)
    assert store.journal_get(intent.key) == intent
    assert store.journal_for_operation(intent.operation_id) == intent
    assert store.journal_list() == [intent]


def test_hostile_outcomes_round_trip_when_settled(store: Store) -> None:
    intent = full_intent()
    store.journal_claim(intent)
    outcome = {"error": {"code": "CONFLICT", "message": HOSTILE["sql"], "state": HOSTILE}}
    assert store.journal_finish(intent.key, intent.owner, "failed", outcome, 1_760_000_001.75)
    row = store.journal_get(intent.key)
    assert row == dataclasses.replace(intent, status="failed", outcome=outcome, updated_at=1_760_000_001.75)


def test_keys_that_differ_only_in_case_or_normal_form_are_different_intents(store: Store) -> None:
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert store.journal_claim(full_intent(key=composed, operation_id="op-a"))
    assert store.journal_claim(full_intent(key=decomposed, operation_id="op-b"))
    assert store.journal_claim(full_intent(key=composed.upper(), operation_id="op-c"))
    assert {i.key for i in store.journal_list()} == {composed, decomposed, composed.upper()}
