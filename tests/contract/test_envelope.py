"""The envelope: its schema validates every envelope, from_dict rejects malformed input, Problem Details
round-trip."""

from __future__ import annotations

import dataclasses
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolproof
from toolproof.contract._envelope import (
    Envelope,
    ErrorInfo,
    Meta,
    envelope_schema,
    from_problem,
    success_envelope_schema,
    to_problem,
)
from toolproof.contract._errors import CONTRACT_VERSION, ERROR_TYPES, ErrorClass

VALIDATOR = jsonschema_rs.validator_for(envelope_schema())


def _failure(cls: ErrorClass, **kw: Any) -> toolproof.Envelope:
    exc = ERROR_TYPES[cls]("It failed.", **kw)
    return toolproof.Envelope.failure(exc, Meta("place_order", "c1", "v1", 1))


def test_schema_is_2020_12_with_descriptions_and_version() -> None:
    schema = envelope_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["x-contract-version"] == CONTRACT_VERSION
    classes = schema["$defs"]["error"]["properties"]["class"]["oneOf"]
    assert {c["const"] for c in classes} == {c.value for c in ErrorClass}
    assert all(c["description"] for c in classes)
    actions = schema["$defs"]["error"]["properties"]["next_action"]["oneOf"]
    assert len(actions) == 5


@pytest.mark.parametrize("cls", list(ErrorClass))
def test_every_class_envelope_validates_and_round_trips(cls: ErrorClass) -> None:
    env = _failure(cls, field="quantity_kg", received=4, hint="Ask again.", state={"charged": True})
    data = env.to_dict()
    assert VALIDATOR.is_valid(data), list(VALIDATOR.iter_errors(data))
    assert toolproof.Envelope.from_dict(data) == env
    problem = to_problem(env)
    assert problem["status"] >= 400
    assert from_problem(problem) == env


def test_success_envelope_validates() -> None:
    env = toolproof.Envelope.success({"order_id": 1}, Meta("t", "c", "v", 1, idempotency_key="k", replayed=True))
    assert VALIDATOR.is_valid(env.to_dict())
    assert toolproof.Envelope.from_dict(env.to_dict()) == env


def test_success_schema_narrows_result() -> None:
    schema = success_envelope_schema({"type": "integer"})
    v = jsonschema_rs.validator_for(schema)
    assert v.is_valid({"ok": True, "result": 3, "meta": {"tool": "t", "call_id": "c"}})
    assert not v.is_valid({"ok": True, "result": "3", "meta": {"tool": "t", "call_id": "c"}})


MALFORMED: list[Any] = [
    None,
    [],
    "ok",
    {},
    {"ok": True},
    {"ok": "yes", "meta": {"tool": "t", "call_id": "c"}},
    {"ok": False, "meta": {"tool": "t", "call_id": "c"}},
    {"ok": False, "error": {"class": "oops", "retryable": False, "next_action": "repair", "code": "X",
                            "message": "m"}, "meta": {"tool": "t", "call_id": "c"}},
    # retryable contradicts the class
    {"ok": False, "error": {"class": "invalid_argument", "retryable": True, "next_action": "repair", "code": "X",
                            "message": "m"}, "meta": {"tool": "t", "call_id": "c"}},
    {"ok": False, "error": {"class": "invalid_argument", "retryable": False, "next_action": "repair",
                            "code": "lower", "message": "m"}, "meta": {"tool": "t", "call_id": "c"}},
    {"ok": True, "result": 1, "meta": {"tool": "t", "call_id": "c"}, "extra": 1},
]


@pytest.mark.parametrize("data", MALFORMED)
def test_from_dict_rejects_malformed(data: Any) -> None:
    with pytest.raises(toolproof.MalformedEnvelope):
        toolproof.Envelope.from_dict(data)


@pytest.mark.parametrize("text", ["", "{", "[1]", "null", "{" * 100_000])
def test_from_json_rejects_garbage(text: str) -> None:
    with pytest.raises(toolproof.MalformedEnvelope):
        toolproof.Envelope.from_json(text)


def test_exhausted_retry_keeps_class_and_retryable_but_escalates() -> None:
    info = ErrorInfo.from_exception(toolproof.TransientUpstream("down"))
    escalated = toolproof.Envelope(
        ok=False,
        meta=Meta("t", "c", "v", 3),
        error=info.escalated(),
    )
    data = escalated.to_dict()
    assert VALIDATOR.is_valid(data)
    assert data["error"]["retryable"] is True
    assert toolproof.Envelope.from_dict(data).error.next_action == "escalate"  # type: ignore[union-attr]


def test_foreign_problem_details_are_classified() -> None:
    env = from_problem(
        {"type": "https://example.com/out-of-credit", "title": "You do not have enough credit.", "status": 403,
         "detail": "Your current balance is 30, but that costs 50.", "balance": 30},
        tool="pay",
    )
    assert env.error is not None
    assert env.error.error_class == "permission_denied"
    assert env.error.state == {"balance": 30}
    assert "balance is 30" in env.error.message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@given(data=json_values)
def test_from_dict_never_crashes(data: Any) -> None:
    try:
        env = toolproof.Envelope.from_dict(data)
    except toolproof.MalformedEnvelope:
        return
    assert VALIDATOR.is_valid(env.to_dict())


def test_a_retry_after_past_floats_range_is_dropped_not_raised() -> None:
    """Found by the every-answer property test: a tool's error with a huge integer delay broke the envelope."""
    from toolproof import ErrorInfo, RateLimited

    info = ErrorInfo.from_exception(RateLimited("slow down", retry_after_s=10**400))  # type: ignore[arg-type]
    assert info.retry_after_s is None


def test_the_hot_path_success_envelope_is_the_ordinary_frozen_one() -> None:
    import copy
    import pickle

    from toolproof.contract._envelope import success_envelope

    fast = success_envelope("get_price", "c-1", "v1", 2, {"price": 1.5}, {"fallback_from": "other"})
    plain = Envelope(True, Meta("get_price", "c-1", "v1", 2, extra={"fallback_from": "other"}), {"price": 1.5})
    assert type(fast) is Envelope and type(fast.meta) is Meta
    assert fast == plain and repr(fast) == repr(plain) and fast.to_dict() == plain.to_dict()
    assert success_envelope("t", "c", None, 1, 0.5, None).meta.extra == {}
    assert copy.deepcopy(fast) == fast and pickle.loads(pickle.dumps(fast)) == fast
    for value, field in ((fast, "ok"), (fast.meta, "tool")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, None)
