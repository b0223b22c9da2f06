"""The one redaction: secrets by name at any depth, by path from the tool, by value, in free text; bounded."""

from __future__ import annotations

import json
import sys
import time
from datetime import date
from enum import Enum
from typing import Annotated, Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import toolproof
from toolproof import Tool
from toolproof.contract._redaction import (
    MAX_TEXT,
    REDACTED,
    is_secret_key,
    redact,
    redact_collect,
    redact_raw,
    redact_text,
    redact_values,
    secret_paths,
)


@pytest.mark.parametrize(
    ("name", "secret"),
    [("api_key", True), ("apiKey", True), ("X-Auth-Token", True), ("access_token", True), ("client_secret", True),
     ("password", True), ("Authorization", True), ("pin", True), ("author", False), ("max_tokens", False),
     ("session_id", False), ("shipping", False), ("crop", False), ("tokenizer", False)],
)
def test_secret_looking_names(name: str, secret: bool) -> None:
    assert is_secret_key(name) is secret


def test_redact_walks_nested_values_and_keeps_the_rest() -> None:
    value = {"user": "a", "api_token": "x", "nested": [{"password": "p", "n": 1}], "headers": {"Cookie": "c"}}
    out = redact(value, frozenset({"user"}))
    assert out == {"user": REDACTED, "api_token": REDACTED, "nested": [{"password": REDACTED, "n": 1}],
                   "headers": {"Cookie": REDACTED}}
    assert value["api_token"] == "x"  # a copy, not an edit


def test_redact_raw_text() -> None:
    assert redact_raw('{"password": "p"}', frozenset()) == {"password": REDACTED}
    assert redact_raw("password=p", frozenset({"password"})) == REDACTED
    assert redact_raw("x" * 5000, frozenset()).endswith("…")


def test_deep_values_do_not_crash() -> None:
    deep: Any = {}
    node = deep
    for _ in range(500):
        node["a"] = {}
        node = node["a"]
    assert REDACTED in json.dumps(redact(deep))


def test_a_secret_two_levels_down_and_inside_lists_is_redacted() -> None:
    value = {"config": {"db": {"password": "hunter2-db"}}, "items": [[{"token": "t0k3n"}], {"n": 1}]}
    out = redact(value)
    assert out == {"config": {"db": {"password": REDACTED}}, "items": [[{"token": REDACTED}], {"n": 1}]}


def test_paths_from_the_tool_redact_whatever_the_name() -> None:
    @toolproof.tool(effect="write")
    def login(user: str, code: Annotated[str, toolproof.Secret]) -> str:
        """Log in. Use it to log in. Returns a session name."""
        return "ok"

    assert login.secret_paths == frozenset({("code",)})
    assert redact({"user": "ann", "code": "123456"}, login.secret_paths) == {"user": "ann", "code": REDACTED}


def test_schema_marks_write_only_and_password_formats_as_secret_paths() -> None:
    schema = {
        "type": "object",
        "properties": {
            "login": {"$ref": "#/$defs/Login"},
            "keys": {"type": "array", "items": {"type": "string", "writeOnly": True}},
            "name": {"type": "string"},
        },
        "$defs": {"Login": {"type": "object", "properties": {"user": {"type": "string"},
                                                             "word": {"type": "string", "format": "password"}}}},
    }
    paths = secret_paths(schema, ["extra"])
    assert paths == frozenset({("extra",), ("login", "word"), ("keys", "*")})
    value = {"login": {"user": "ann", "word": "w0rd"}, "keys": ["k1", "k2"], "name": "x"}
    assert redact(value, paths) == {"login": {"user": "ann", "word": REDACTED}, "keys": [REDACTED, REDACTED],
                                    "name": "x"}
    tool = Tool.from_schema("t", "T.", schema, lambda a, c: None, effect="read")
    assert tool.secret_paths == frozenset({("login", "word"), ("keys", "*")})


def test_a_cyclic_schema_ends() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#"}, "b": {"$ref": "#"}, "pw": {"writeOnly": True}}}
    paths = secret_paths(schema)
    assert ("pw",) in paths and ("a", "pw") in paths


def test_collect_returns_the_secret_texts_and_values_are_scrubbed_anywhere() -> None:
    out, found = redact_collect({"api_token": "tok-12345", "auth": {"pin": 4321}, "user": "ann"})
    assert out == {"api_token": REDACTED, "auth": REDACTED, "user": "ann"}
    assert sorted(found) == ["4321", "tok-12345"]
    echoed = {"msg": "signed in with tok-12345", "pin": 4321, "tok-12345": 1, "n": 4321, "short": "ab"}
    assert redact_values(echoed, [*found, "ab"]) == {
        "msg": f"signed in with {REDACTED}", "pin": REDACTED, REDACTED: 1, "n": REDACTED, "short": REDACTED}


@pytest.mark.parametrize(
    ("text", "leak"),
    [
        ("ValueError: login failed: password=hunter2 user=ann", "hunter2"),
        ("{'user': 'ann', 'password': 'hunter two'}", "hunter two"),
        ('{"api_key": "abc123xyz", "n": 1}', "abc123xyz"),
        ("Authorization: Bearer eyJhbGciOi.payload123.sig456789", "eyJhbGciOi"),
        ("headers X-Api-Key: k3y-v4lue", "k3y-v4lue"),
        ("connect to postgresql://app:s3cr3t@db:5432/x failed", "s3cr3t"),
        ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz in use", "abcdefghijklmnop"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123 expired", "ghp_abcdefghij"),
        ("aws AKIAABCDEFGHIJKLMNOP denied", "AKIAABCDEFGHIJKLMNOP"),
        ("  File \"x.py\", line 3, in send\n    client.send(token='t-0ken-42')\n", "t-0ken-42"),
    ],
)
def test_redact_text_scrubs_secret_looking_values(text: str, leak: str) -> None:
    out = redact_text(text)
    assert leak not in out
    assert REDACTED in out


def test_redact_text_keeps_what_is_not_secret() -> None:
    text = "max_tokens=100 author=ann session_id=s1 shipping: fast; see https://example.com/a?b=c"
    assert redact_text(text) == text


def test_redact_text_scrubs_given_secrets_and_bounds_its_work() -> None:
    assert redact_text("upstream said: wrong secret 'Zebra-42'", ["Zebra-42"]) == (
        f"upstream said: wrong secret '{REDACTED}'")
    big = "password=x " + "a" * (MAX_TEXT + 10)
    out = redact_text(big)
    assert len(out) < MAX_TEXT + 100 and "password=x" not in out and out.endswith("(21 more characters)")
    started = time.perf_counter()
    redact_text("password=" * 100_000 + "a" * 100_000)  # no catastrophic backtracking
    assert time.perf_counter() - started < 10


# --- hostile input ------------------------------------------------------------------------------------------


def _nested(levels: int, leaf: Any) -> Any:
    value = leaf
    for i in range(levels):
        value = {"a": value} if i % 2 else [value]
    return value


def test_ten_thousand_levels_do_not_blow_the_stack() -> None:
    deep = _nested(10_000, {"password": "deep-secret"})
    limit = sys.getrecursionlimit()
    out = redact(deep)
    assert "deep-secret" not in json.dumps(out)
    assert REDACTED in json.dumps(out)
    assert sys.getrecursionlimit() == limit
    raw = '{"a":' * 10_000 + '{"password": "deep-secret"}' + "}" * 10_000  # too deep for json.loads
    assert "deep-secret" not in json.dumps(redact_raw(raw))
    assert redact_collect(deep)[1] == []  # too deep to inspect: replaced, not collected
    assert "deep-secret" not in redact_text(raw)


def test_huge_lists_are_cut_with_the_marker_and_never_leak() -> None:
    huge = [{"n": i} for i in range(300_000)] + [{"password": "late-secret"}]
    started = time.perf_counter()
    out = redact(huge)
    assert time.perf_counter() - started < 10
    assert out[-1] == REDACTED and len(out) < 150_000
    assert "late-secret" not in json.dumps(out)


def test_lone_surrogates_nul_and_non_string_keys_come_out_storable() -> None:
    value = {"x\ud800": "a\udfffb\x00c", 7: {"password": "p"}, None: 1, (1, 2): [b"bytes"], "t\x00oken": "z"}
    out = redact(value)
    text = json.dumps(out, ensure_ascii=False)
    text.encode("utf-8")  # no lone surrogate survives
    assert "\x00" not in text and "\\u0000" not in text
    assert out["x\ufffd"] == "a\ufffdb\ufffdc"
    assert out["7"] == {"password": REDACTED}
    assert out["None"] == 1 and out["(1, 2)"] == ["bytes"]
    assert "\x00" not in redact_text("password=\x00\ud800 boom\x00")


class _Crop(Enum):
    JEERA = "jeera"


def test_values_json_cannot_carry_come_out_as_json_and_scrubbed() -> None:
    out = redact({"c": _Crop.JEERA, "d": date(2026, 1, 2), "b": b"password=x1y2", "o": object.__new__(_BadKey)})
    assert out == {"c": "jeera", "d": "2026-01-02", "b": f"password={REDACTED}", "o": REDACTED}


class _BadKey:
    def __str__(self) -> str:
        raise RuntimeError("no text")

    def __hash__(self) -> int:
        return 1


def test_a_key_without_text_is_redacted_not_raised() -> None:
    assert redact({_BadKey(): "v"}) == {REDACTED: "v"}


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=30,
)
_secret_names = st.sampled_from(["password", "apiKey", "X-Auth-Token", "client_secret", "db_password", "cookie"])


@settings(max_examples=200)
@given(_json, _secret_names, st.text(alphabet="QXZ#%", min_size=6, max_size=12), st.integers(0, 6))
def test_a_planted_secret_never_survives(value: Any, name: str, secret: str, depth: int) -> None:
    assume(secret not in json.dumps(value, ensure_ascii=False))
    planted: Any = {name: secret, "other": value}
    for _ in range(depth):
        planted = [{"wrap": planted}]
    out = redact(planted)
    assert secret not in json.dumps(out, ensure_ascii=False)
    scrubbed = redact_values({"echo": f"got {secret}", "v": value}, redact_collect(planted)[1])
    assert secret not in json.dumps(scrubbed, ensure_ascii=False)
