"""Canonical JSON: one text per value (40 == 40.0, NFC), never a crash; the identity idempotency keys hash."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from enum import Enum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolproof
from toolproof.contract._canonical import _emit, canonical_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def test_sorted_keys_and_no_spaces() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": None, "c": True}]}) == '{"a":[1,{"c":true,"d":null}],"b":1}'


@pytest.mark.parametrize(("a", "b"), [(40, 40.0), (0, -0.0), (1e308, int(1e308)), (Decimal("40.00"), 40),
                                      (Decimal("0.1"), 0.1)])
def test_equal_numbers_equal_text(a: Any, b: Any) -> None:
    assert canonical_json(a) == canonical_json(b)


def test_different_numbers_different_text() -> None:
    assert canonical_json(1e308) != canonical_json(10**308)  # 1e308 is not exactly 10**308
    assert canonical_json(0.1) != canonical_json(0.10000000000000002)
    assert canonical_json(True) != canonical_json(1)


def test_unicode_is_nfc_normalised() -> None:
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert canonical_json({composed: composed}) == canonical_json({decomposed: decomposed})
    assert canonical_json("\u212b") == canonical_json("\u00c5")  # Angstrom sign == A with ring


def test_lone_surrogates_and_controls_are_stable_ascii() -> None:
    text = canonical_json({"x": "\ud800\x00\u2028"})
    assert text.isascii() and text == canonical_json({"x": "\ud800\x00\u2028"})


def test_python_values_from_typed_handlers() -> None:
    class Crop(Enum):
        JEERA = "jeera"

    assert canonical_json({"c": Crop.JEERA, "d": date(2026, 10, 23), "t": (1, 2)}) == (
        canonical_json({"c": "jeera", "d": "2026-10-23", "t": [1, 2]}))
    assert canonical_json({3, 1, 2}) == "[1,2,3]"


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (float("nan"), "NOT_FINITE"),
        ({"x": float("inf")}, "NOT_FINITE"),
        (Decimal("NaN"), "NOT_FINITE"),
        ({1: "a"}, "BAD_KEY"),
        ({"caf\u00e9": 1, "cafe\u0301": 2}, "DUPLICATE_KEY"),
        (object(), "UNSUPPORTED_VALUE"),
        (b"bytes", "UNSUPPORTED_VALUE"),
        (10**5000, "TOO_LARGE"),
    ],
    ids=["nan", "inf", "decimal-nan", "int-key", "nfc-duplicate", "object", "bytes", "huge-int"],
)
def test_hostile_values_get_clean_invalid_argument(value: Any, code: str) -> None:
    with pytest.raises(toolproof.InvalidArgument) as info:
        canonical_json(value)
    assert info.value.code == code


def test_deep_nesting_is_refused_not_a_crash() -> None:
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(toolproof.InvalidArgument) as info:
        canonical_json(deep)
    assert info.value.code == "TOO_DEEP"
    shallow: Any = "x"
    for _ in range(200):
        shallow = {"a": shallow}
    assert canonical_json(shallow) == canonical_json(json.loads(json.dumps(shallow)))


@given(json_values)
@settings(max_examples=200, deadline=None)
def test_canonical_json_is_json_and_stable(value: Any) -> None:
    try:
        text = canonical_json(value)
    except toolproof.InvalidArgument as exc:  # two keys equal after NFC: refused, never merged silently
        code = exc.code
        assert code == "DUPLICATE_KEY"
        return
    assert text == canonical_json(json.loads(text))  # a fixed point: parse and re-canonicalise
    assert text.isascii()


_ascii = st.text(alphabet=st.characters(max_codepoint=127), max_size=12)


@given(st.dictionaries(_ascii, st.one_of(_ascii, st.integers(-(2**70), 2**70), st.booleans(), st.none(),
                                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5)),
                       max_size=8))
def test_the_flat_fast_path_writes_the_same_text_as_the_general_one(value: dict[str, Any]) -> None:
    parts: list[str] = []
    _emit(value, parts, 0, [0])
    assert canonical_json(value) == "".join(parts)
