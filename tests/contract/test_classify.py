"""HTTP, Problem Details and exceptions map onto the contract; Retry-After per urllib3's own test vectors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

import toolproof
from tests._data import corpus
from toolproof.contract._classify import classify_exception, classify_http, parse_retry_after
from toolproof.contract._envelope import to_problem

VECTORS = json.loads(corpus("reliability_specs", "urllib3_retry_vectors.json").read_text())
PARSE = VECTORS["retry_after_parse"]
NOW = datetime.fromisoformat(PARSE["http_date_vectors_now"].replace("Z", "+00:00"))


@pytest.mark.parametrize(("value", "expected"), PARSE["valid"])
def test_retry_after_seconds(value: str, expected: float) -> None:
    assert parse_retry_after(value) == expected


@pytest.mark.parametrize("value", PARSE["invalid"])
def test_retry_after_invalid_is_ignored(value: str) -> None:
    assert parse_retry_after(value) is None


@pytest.mark.parametrize(("value", "respected", "expected"), PARSE["http_date_vectors"])
def test_retry_after_http_dates(value: str, respected: bool, expected: float | None) -> None:
    if not respected:
        # urllib3 ignores the header when told not to respect it; we always parse it, and the policy decides.
        assert parse_retry_after(value, now=NOW) is not None
        return
    got = parse_retry_after(value, now=NOW)
    if expected is None:  # a date now or in the past: no wait
        assert got == 0
    else:
        assert got == pytest.approx(expected)


def test_retry_after_clamped() -> None:
    cap = PARSE["retry_after_max"]["DEFAULT_RETRY_AFTER_MAX"]
    assert parse_retry_after("999999999") == cap
    assert parse_retry_after("Mon, 03 Jun 2030 11:30:12 GMT", now=NOW) == cap


BRIEF_STATUS = {
    400: "invalid_argument", 422: "invalid_argument", 401: "auth_failed", 403: "permission_denied",
    404: "not_found", 409: "conflict", 408: "transient_upstream", 500: "transient_upstream",
    502: "transient_upstream", 503: "transient_upstream", 504: "transient_upstream", 429: "rate_limited",
}


@pytest.mark.parametrize(("status", "cls"), sorted(BRIEF_STATUS.items()))
def test_status_table(status: int, cls: str) -> None:
    assert classify_http(status).error_class == cls


def test_429_with_retry_after_http_date() -> None:
    exc = classify_http(429, {"retry-after": "Mon, 03 Jun 2019 11:30:12 GMT"}, now=NOW)
    assert exc.error_class == "rate_limited"
    assert exc.retry_after_s == pytest.approx(1812)


def test_problem_details_body_with_extensions() -> None:
    body = json.dumps({"type": "https://api.example/problems/quantity", "title": "Bad quantity", "status": 422,
                       "detail": "4 kg is outside 10 to 5000 kg", "field": "quantity_kg", "code": "BAD_QUANTITY",
                       "minimum_kg": 10})
    exc = classify_http(422, [("Content-Type", "application/problem+json")], body)
    assert exc.error_class == "invalid_argument"
    assert exc.code == "BAD_QUANTITY"
    assert exc.field == "quantity_kg"
    assert exc.state == {"minimum_kg": 10}
    assert "4 kg is outside" in exc.message


@pytest.mark.parametrize("body", ["<html>" + "x" * 10_000, b"\xff\xfe\x00garbage", "{not json", "{" * 50_000, ""])
def test_hostile_bodies_stay_short_and_safe(body: Any) -> None:
    exc = classify_http(503, None, body)
    assert exc.error_class == "transient_upstream"
    assert len(exc.message) < 600


def test_exceptions_by_effect() -> None:
    assert classify_exception(TimeoutError(), effect="read").error_class == "transient_upstream"
    assert classify_exception(TimeoutError(), effect="write").error_class == "outcome_unknown"
    assert classify_exception(ConnectionResetError(), effect="write", dispatched=False).error_class == (
        "transient_upstream"
    )
    assert classify_exception(ConnectionRefusedError(), effect="write").error_class == "outcome_unknown"
    internal = classify_exception(ValueError("/home/app/db.py line 3 <Foo object at 0x1>"))
    assert internal.error_class == "internal_error"
    assert "/home" not in internal.message and "0x1" not in internal.message


def test_tool_errors_pass_through() -> None:
    exc = toolproof.NotFound("no such order")
    assert classify_exception(exc) is exc


def test_problem_round_trip_through_http() -> None:
    env = toolproof.Envelope.failure(toolproof.RateLimited("slow", retry_after_s=7),
                                     toolproof.Meta("t", "c", "v", 1))
    problem = to_problem(env)
    back = classify_http(problem["status"], {"Content-Type": "application/problem+json"}, json.dumps(problem),
                         now=datetime.now(UTC))
    assert back.error_class == "rate_limited"
    assert back.retry_after_s == 7
