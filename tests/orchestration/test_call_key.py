"""The loop guard's call identity is the idempotency keys' canonical JSON: one text per JSON value."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.contract._canonical import canonical_json
from toolproof.orchestration.guard import call_key

_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
# Arguments as the runner gets them: an object (or a list); a str is JSON text the model sent.
_arguments = st.dictionaries(st.text(max_size=8), _json, max_size=5) | st.lists(_json, max_size=4)


def _twin(value: Any) -> Any:
    """The same JSON value written differently: integers as floats, strings decomposed (NFD)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return float(value) if abs(value) < 2**53 else value
    if isinstance(value, str):
        return unicodedata.normalize("NFD", value)
    if isinstance(value, list):
        return [_twin(v) for v in value]
    if isinstance(value, dict):
        return {unicodedata.normalize("NFD", k): _twin(v) for k, v in value.items()}
    return value


@settings(max_examples=300)
@given(_arguments)
def test_call_key_is_canonical_json(value: Any) -> None:
    try:
        expected = canonical_json(value)
    except Exception:  # two keys equal after normalisation: no canonical text, no claim about the guard
        return
    assert call_key(value) == expected
    assert call_key(json.dumps(value)) == expected  # JSON text as the model sent it
    assert call_key(json.dumps(value).encode()) == expected


@settings(max_examples=300)
@given(_arguments)
def test_call_key_and_canonical_json_agree_on_twins(value: Any) -> None:
    twin = _twin(value)
    try:
        same = canonical_json(value) == canonical_json(twin)
    except Exception:
        return
    assert same  # the reference: 40 == 40.0, NFC == NFD
    assert call_key(value) == call_key(twin)


def test_forty_and_forty_point_zero_and_unicode_forms_are_one_call() -> None:
    assert call_key({"n": 40}) == call_key({"n": 40.0}) == call_key('{"n": 40.0}') == canonical_json({"n": 40})
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert call_key({composed: composed}) == call_key({decomposed: decomposed})


def test_values_without_canonical_text_still_compare() -> None:
    nan = {"q": float("nan")}
    assert call_key(nan) == call_key(nan)  # the guard still sees a repeated NaN call
    assert call_key("{not json") == "{not json"
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    assert call_key(deep) != call_key(deep)  # too deep to compare: never treated as a repeat
