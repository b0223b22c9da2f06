"""Hostile and random input to every tool always yields an Envelope, never a crash, a hang or a leak."""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolproof
from toolproof.contract._envelope import envelope_schema
from toolproof.examples.wholesaler import Shop, build_toolset
from toolproof.examples.wholesaler.old_tools import build_old_toolset

SHOP = Shop(today=lambda: date(2026, 10, 19))
TOOLSET = build_toolset(SHOP) + build_old_toolset(SHOP)
# Thousands of failing calls in one conversation: the loop guard would rightly stop them (tested elsewhere).
RUNNER = toolproof.Runner(TOOLSET, loop_guard=None, retry=None)
CTX = toolproof.CallContext(conversation_id="c", principal="B-1")
LEAKS = re.compile(r"Traceback|File \"|/[a-z]+/[a-z]+|object at 0x|<[a-zA-Z_.]+ object")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=25,
)


ENVELOPE_VALIDATOR = jsonschema_rs.validator_for(envelope_schema())


def _assert_clean(env: toolproof.Envelope) -> None:
    assert isinstance(env, toolproof.Envelope)
    data = json.loads(env.to_json())
    assert ENVELOPE_VALIDATOR.is_valid(data), list(ENVELOPE_VALIDATOR.iter_errors(data))[:3]
    if env.error is not None:
        text = " ".join(str(x) for x in (env.error.message, env.error.hint, env.error.code))
        assert not LEAKS.search(text), text


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(TOOLSET.names), arguments=json_values)
def test_any_json_value(name: str, arguments: Any) -> None:
    _assert_clean(RUNNER.call_sync(name, arguments, context=CTX))


@settings(max_examples=200)
@given(name=st.sampled_from(TOOLSET.names), text=st.text(max_size=200))
def test_any_text(name: str, text: str) -> None:
    _assert_clean(RUNNER.call_sync(name, text, context=CTX))


@pytest.mark.e2e  # 300 generated calls through the whole pipeline: seconds, not the fast loop
@settings(max_examples=300)
@given(
    name=st.sampled_from(TOOLSET.names),
    arguments=st.dictionaries(
        st.sampled_from(["crop", "grade", "quantity_kg", "delivery_date", "order_id", "days", "item", "qty"])
        | st.text(max_size=10),
        json_values,
        max_size=6,
    ),
)
def test_any_dict(name: str, arguments: dict[str, Any]) -> None:
    _assert_clean(RUNNER.call_sync(name, arguments, context=CTX))


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": [value]}
    return value


HOSTILE: list[tuple[Any, str]] = [
    ({"crop": _nested(50_000)}, "TOO_DEEP"),
    ('{"crop": ' + "[" * 100_000 + "]" * 100_000 + "}", "TOO_DEEP"),
    ({"crop": "x" * 2_000_000}, "STRING_TOO_LONG"),
    ("{" + '"k":1,' * 300_000 + '"crop":"onion"}', "ARGUMENTS_TOO_LARGE"),
    ({"crop": "onion", "grade": float("nan")}, "NOT_JSON"),
    ('{"crop": "onion", "grade": NaN}', "INVALID_JSON"),
    ({"crop": "onion", "grade": object()}, "NOT_JSON"),
    ({"crop": "onion", 1: 2}, "NOT_JSON"),
    ({"crop": "onion", "grade": b"A"}, "NOT_JSON"),
    ({"crop": [0] * 200_000}, "TOO_MANY_ITEMS"),
    ([1, 2], "ARGUMENTS_NOT_OBJECT"),
    (42, "ARGUMENTS_NOT_OBJECT"),
    ("[1]", "ARGUMENTS_NOT_OBJECT"),
    ("{bad json", "INVALID_JSON"),
    (b"\xff\xfe", "INVALID_JSON"),
    ({"crop": "onion", "grade": "A", "extra": "😀" * 10}, "UNEXPECTED_FIELD"),
    ({"crop": "jeera\u0000"}, "NOT_IN_ENUM"),
    ({"crop": 10**400}, "WRONG_TYPE"),
]


@pytest.mark.parametrize(("arguments", "code"), HOSTILE)
def test_hostile_input_is_invalid_argument(arguments: Any, code: str) -> None:
    env = RUNNER.call_sync("get_today_price", arguments)
    assert env.error is not None
    assert env.error.error_class == "invalid_argument"
    assert env.error.code == code
    _assert_clean(env)
    assert len(env.to_json()) < 5_000  # the echo of a huge value is truncated


def test_float_extremes_in_range_checks() -> None:
    env = RUNNER.call_sync("place_order", {"crop": "onion", "quantity_kg": 1e308, "delivery_date": "2026-10-23"},
                           context=CTX)
    assert env.error is not None
    assert env.error.code == "OUT_OF_RANGE"


def test_nested_path_is_named() -> None:
    @toolproof.tool(effect="read")
    def sum_lines(lines: list[dict[str, int]]) -> int:
        """Sum numbers."""
        return sum(sum(d.values()) for d in lines)

    env = toolproof.Runner(toolproof.Toolset([sum_lines])).call_sync("sum_lines", {"lines": [{"a": 1}, {"b": "2"}]})
    assert env.error is not None
    assert env.error.field == "lines[1].b"
    assert env.error.received == "2"


def test_multiple_problems_are_all_mentioned() -> None:
    env = RUNNER.call_sync("place_order", {"crop": "cumin", "quantity_kg": "4"}, context=CTX)
    assert env.error is not None
    assert "Also:" in env.error.message
    assert env.error.field in {"crop", "quantity_kg", "delivery_date"}
