"""The argument scorer's rules, one by one, and its behaviour on hostile input."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.evals._scoring import (
    Absent,
    AnyValue,
    Approx,
    ExpectedCall,
    Options,
    ToolCall,
    ToolSpec,
    check_call,
    check_parallel,
    normalise,
)

SPEC = ToolSpec(
    "place_order",
    {
        "crop": {"type": "string", "enum": ["onion", "jeera"]},
        "quantity_kg": {"type": "number"},
        "days": {"type": "integer"},
        "lots": {"type": "array", "items": {"type": "string"}},
        "grade": {"type": ["string", "null"]},
    },
    ("crop", "quantity_kg"),
)


def exp(**args: Any) -> ExpectedCall:
    return ExpectedCall("place_order", args)


def test_right_call_passes_and_reports_both_verdicts() -> None:
    check = check_call(exp(crop=Options(("onion",)), quantity_kg=Approx(400)),
                       ToolCall("place_order", {"crop": "onion", "quantity_kg": 400}), SPEC)
    assert check.ok and check.tool_ok and check.args_ok and check.errors == ()


def test_right_tool_wrong_quantity_is_an_argument_failure_not_a_tool_failure() -> None:
    check = check_call(exp(quantity_kg=Approx(400)), ToolCall("place_order", {"crop": "onion", "quantity_kg": 4}),
                       SPEC)
    assert check.tool_ok and not check.args_ok
    assert check.errors[0].kind == "wrong_value" and check.errors[0].field == "quantity_kg"
    assert check.errors[0].received == 4.0


def test_wrong_tool() -> None:
    check = check_call(exp(), ToolCall("check_stock", {"crop": "onion"}), SPEC)
    assert not check.tool_ok and check.errors[0].kind == "wrong_tool"


def test_required_missing_unexpected_and_malformed() -> None:
    assert check_call(exp(), ToolCall("place_order", {"crop": "onion"}), SPEC).errors[0].kind == "missing_required"
    extra = check_call(exp(), ToolCall("place_order", {"crop": "onion", "quantity_kg": 1, "qty": 5}), SPEC)
    assert extra.errors[0].kind == "unexpected_param" and extra.errors[0].field == "qty"
    bad = check_call(exp(), ToolCall("place_order", None, "{not json"), SPEC)
    assert bad.tool_ok and bad.errors[0].kind == "malformed_arguments" and bad.errors[0].received == "{not json"


def test_int_is_accepted_for_float_but_not_float_for_int() -> None:
    assert check_call(exp(quantity_kg=Options((400.0,))), ToolCall("place_order", {"crop": "onion",
                                                                                   "quantity_kg": 400}), SPEC).ok
    check = check_call(exp(days=Options((7,))), ToolCall("place_order", {"crop": "onion", "quantity_kg": 1,
                                                                         "days": 7.0}), SPEC)
    assert check.errors[0].kind == "wrong_type"


def test_bool_is_not_an_int() -> None:
    check = check_call(exp(days=Options((1,))), ToolCall("place_order", {"crop": "onion", "quantity_kg": 1,
                                                                         "days": True}), SPEC)
    assert not check.ok and check.errors[0].kind == "wrong_type"


def test_string_normalisation_only_when_asked() -> None:
    call = ToolCall("place_order", {"crop": "Onion ", "quantity_kg": 1})
    assert check_call(exp(crop=Options(("onion",), normalise_strings=True)), call, SPEC).ok
    assert not check_call(exp(crop=Options(("onion",), normalise_strings=False)), call, SPEC).ok
    assert normalise("April 1, 2024") == normalise("april 1 2024") == "april12024"


def test_lists_are_ordered() -> None:
    m = exp(lots=Options((["a", "b"],)))
    assert check_call(m, ToolCall("place_order", {"crop": "onion", "quantity_kg": 1, "lots": ["a", "b"]}), SPEC).ok
    assert not check_call(m, ToolCall("place_order", {"crop": "onion", "quantity_kg": 1, "lots": ["b", "a"]}),
                          SPEC).ok


def test_optional_absent_and_any() -> None:
    base = {"crop": "onion", "quantity_kg": 1}
    assert check_call(exp(days=Options((7,), optional=True)), ToolCall("place_order", base), SPEC).ok
    missing = check_call(exp(days=Options((7,))), ToolCall("place_order", base), SPEC)
    assert missing.errors[0].kind == "missing_expected" and missing.errors[0].field == "days"
    assert check_call(exp(grade=Absent()), ToolCall("place_order", base), SPEC).ok
    assert check_call(exp(grade=Absent()), ToolCall("place_order", {**base, "grade": "A"}),
                      SPEC).errors[0].kind == "should_be_absent"
    assert check_call(exp(days=AnyValue()), ToolCall("place_order", {**base, "days": 3}), SPEC).ok
    assert not check_call(exp(days=AnyValue()), ToolCall("place_order", {**base, "days": "3"}), SPEC).ok


def test_strict_mode_rejects_parameters_the_answer_does_not_name() -> None:
    strict = ExpectedCall("place_order", {"crop": Options(("onion",)), "quantity_kg": Options((1,))}, strict=True)
    check = check_call(strict, ToolCall("place_order", {"crop": "onion", "quantity_kg": 1, "days": 3}), SPEC)
    assert check.errors[0].kind == "unexpected_param"


def test_parallel_calls_match_in_any_order_but_count_must_match() -> None:
    a = ExpectedCall("get_today_price", {"crop": Options(("onion",))})
    b = ExpectedCall("get_today_price", {"crop": Options(("jeera",))})
    spec = {"get_today_price": ToolSpec("get_today_price", {"crop": {"type": "string"}}, ("crop",))}
    calls = [ToolCall("get_today_price", {"crop": "jeera"}), ToolCall("get_today_price", {"crop": "onion"})]
    assert check_parallel([a, b], calls, spec).ok
    assert check_parallel([a, b], calls[:1], spec).errors[0].kind == "wrong_count"
    twice = [ToolCall("get_today_price", {"crop": "onion"}), ToolCall("get_today_price", {"crop": "onion"})]
    assert not check_parallel([a, b], twice, spec).ok


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=120, deadline=None)
@given(st.dictionaries(st.text(max_size=12), json_values, max_size=6), json_values)
def test_any_arguments_get_a_verdict_never_an_exception(args: dict[str, Any], expected: Any) -> None:
    matchers = {"crop": Options((expected,)), "lots": Options((expected, [expected])), "days": Approx(3.0)}
    check = check_call(ExpectedCall("place_order", matchers), ToolCall("place_order", args), SPEC)
    assert check.tool_ok
    assert check.ok or check.errors
