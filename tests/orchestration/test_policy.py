"""Retry policy, budgets and the token bucket: the pure decisions, against published conformance vectors."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._data import corpus
from toolproof.contract._classify import classify_http
from toolproof.contract._errors import CLASS_SPECS, ErrorClass
from toolproof.orchestration.policy import (
    RetryPolicy,
    RetryTokenBucket,
    RunBudget,
    RunState,
    StopReason,
    decide_retry,
)

AWS = json.loads(corpus("reliability_specs", "aws_standard_retry_cases.json").read_text())["cases"]
URLLIB3 = json.loads(corpus("reliability_specs", "urllib3_retry_vectors.json").read_text())["backoff"]["vectors"]

AWS_OUTCOMES = {
    StopReason.BUDGET_EXHAUSTED: "max_attempts_exceeded",
    StopReason.RETRY_QUOTA_EXCEEDED: "retry_quota_exceeded",
}


def aws_policy(given: dict[str, Any]) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=given["max_attempts"],
        base_delay_s=given["exponential_base"],
        multiplier=given["exponential_power"],
        max_delay_s=given["max_backoff_time"],
        jitter="none",
        max_wall_s=None,
    )


@pytest.mark.parametrize("name", sorted(AWS))
def test_aws_standard_retry_cases(name: str) -> None:
    """The cross-SDK cases of the AWS "standard" retry mode, status by status, quota by quota."""
    case = AWS[name]
    policy = aws_policy(case["given"])
    bucket = RetryTokenBucket(500, initial=case["given"]["initial_retry_tokens"])
    last_cost = 0
    for attempts, response in enumerate(case["responses"], start=1):
        expected = response["expected"]
        if response["status_code"] < 400:
            bucket.on_success(last_cost)
            outcome = "success"
        else:
            error = classify_http(response["status_code"])
            decision = decide_retry(policy, error_class=error.error_class, attempts=attempts, now=0.0, bucket=bucket)
            if decision.retry:
                outcome = "retry_request"
                last_cost = decision.tokens
                assert decision.delay_s == pytest.approx(expected["delay"])
            else:
                assert decision.reason is not None
                outcome = AWS_OUTCOMES[decision.reason]
        assert outcome == expected["outcome"]
        assert bucket.available == expected["retry_quota"]


def test_timeout_retries_cost_more_and_success_without_retry_refunds_one() -> None:
    bucket = RetryTokenBucket(500, initial=480)
    assert bucket.try_acquire(timeout=True) == 10
    assert bucket.available == 470
    bucket.on_success(0)
    assert bucket.available == 471
    full = RetryTokenBucket(500)
    full.on_success(0)
    assert full.available == 500  # never above capacity


def _urllib3_cases() -> list[tuple[dict[str, Any], int, Any]]:
    out = []
    for vec in URLLIB3:
        values = vec.get("expected") or vec.get("expected_range")
        for n, value in zip(vec["after_increments"], values, strict=True):
            if n >= 2:  # urllib3 never waits before its first retry; ours does (the brief's 1 s base)
                out.append((vec, n, value))
    return out


@pytest.mark.parametrize(("vec", "errors", "expected"), _urllib3_cases())
def test_urllib3_backoff_vectors(vec: dict[str, Any], errors: int, expected: Any) -> None:
    """urllib3: factor * 2**(errors-1), capped; our retry n = errors-1 with base = 2 * factor."""
    policy = RetryPolicy(
        base_delay_s=2 * vec["backoff_factor"],
        multiplier=2,
        max_delay_s=vec.get("backoff_max", 120),
        jitter="none",
        jitter_s=vec.get("backoff_jitter", 0.0),
    )
    if isinstance(expected, list):
        lo, hi = expected
        for rand in (0.0, 0.5, 0.999999):
            assert lo - 1e-9 <= policy.backoff(errors - 1, rand) <= hi + 1e-9
    else:
        assert policy.backoff(errors - 1, 0.0) == pytest.approx(expected)


def test_defaults_follow_the_brief() -> None:
    policy = RetryPolicy()
    assert policy.max_attempts == 3
    assert policy.backoff(1, 1.0) == 1.0
    assert policy.backoff(2, 1.0) == 2.0
    assert policy.backoff(1, 0.0) == 0.5  # half jitter: at most half the delay is taken off
    assert policy.backoff(50, 1.0) == policy.max_delay_s
    assert policy.backoff(10**6, 1.0) == policy.max_delay_s  # no overflow


@given(retry=st.integers(1, 10_000), rand=st.floats(0, 1, exclude_max=True),
       jitter=st.sampled_from(["full", "half", "none"]))
def test_backoff_is_bounded(retry: int, rand: float, jitter: Any) -> None:
    policy = RetryPolicy(jitter=jitter, max_delay_s=7.0)
    delay = policy.backoff(retry, rand)
    assert 0.0 <= delay <= 7.0
    assert math.isfinite(delay)
    full = min(7.0, 2.0 ** (retry - 1)) if retry < 64 else 7.0
    if jitter == "none":
        assert delay == full
    elif jitter == "half":
        assert full / 2 - 1e-9 <= delay <= full


@pytest.mark.parametrize("error_class", list(ErrorClass))
def test_only_retryable_classes_are_retried_and_others_spend_nothing(error_class: ErrorClass) -> None:
    bucket = RetryTokenBucket()
    run = RunState(0.0)
    decision = decide_retry(RetryPolicy(), error_class=error_class, attempts=1, now=0.0, bucket=bucket, run=run,
                            run_budget=RunBudget())
    assert decision.retry is CLASS_SPECS[error_class].retryable
    if not decision.retry:
        assert decision.reason is None
        assert bucket.available == 500


@pytest.mark.parametrize(
    ("effect", "idempotent", "risk", "retry", "reason"),
    [
        ("read", True, "low", True, None),
        ("write", True, "low", True, None),
        ("write", False, "low", False, StopReason.NOT_IDEMPOTENT),
        ("write", True, "high", False, StopReason.HIGH_RISK),
        ("write", False, "high", False, StopReason.HIGH_RISK),
    ],
)
def test_tool_effect_decides(effect: Any, idempotent: bool, risk: Any, retry: bool, reason: Any) -> None:
    decision = decide_retry(RetryPolicy(), error_class=ErrorClass.TRANSIENT_UPSTREAM, attempts=1, now=0.0,
                            effect=effect, idempotent=idempotent, risk=risk)
    assert decision.retry is retry
    assert decision.reason == reason


def test_retry_after_is_authoritative_and_bounded_by_the_budgets() -> None:
    policy = RetryPolicy(max_wall_s=30)
    d = decide_retry(policy, error_class=ErrorClass.RATE_LIMITED, attempts=1, now=0.0, retry_after_s=25.0,
                     call_deadline=30.0)
    assert d.retry and d.delay_s == 25.0  # above max_delay_s (20): the upstream's word wins
    d = decide_retry(policy, error_class=ErrorClass.RATE_LIMITED, attempts=1, now=0.0, retry_after_s=31.0,
                     call_deadline=30.0)
    assert not d.retry and d.reason is StopReason.RETRY_AFTER_TOO_LONG
    run = RunState(0.0)
    d = decide_retry(policy, error_class=ErrorClass.RATE_LIMITED, attempts=1, now=5.0, retry_after_s=10.0,
                     run=run, run_budget=RunBudget(max_wall_s=12.0))
    assert not d.retry and d.reason is StopReason.RETRY_AFTER_TOO_LONG


def test_call_and_run_budgets() -> None:
    policy = RetryPolicy(jitter="none")
    d = decide_retry(policy, error_class=ErrorClass.TRANSIENT_UPSTREAM, attempts=1, now=9.5, call_deadline=10.0)
    assert d.reason is StopReason.BUDGET_EXHAUSTED
    run = RunState(0.0)
    run.retries = 2
    d = decide_retry(policy, error_class=ErrorClass.TRANSIENT_UPSTREAM, attempts=1, now=0.0, run=run,
                     run_budget=RunBudget(max_retries=2))
    assert d.reason is StopReason.RUN_BUDGET_EXHAUSTED
    d = decide_retry(policy, error_class=ErrorClass.TRANSIENT_UPSTREAM, attempts=1, now=99.5, run=RunState(0.0),
                     run_budget=RunBudget(max_wall_s=100))
    assert d.reason is StopReason.RUN_BUDGET_EXHAUSTED


def test_no_tokens_are_taken_for_a_retry_that_will_not_happen() -> None:
    bucket = RetryTokenBucket()
    decide_retry(RetryPolicy(), error_class=ErrorClass.TRANSIENT_UPSTREAM, attempts=3, now=0.0, bucket=bucket)
    decide_retry(RetryPolicy(), error_class=ErrorClass.TRANSIENT_UPSTREAM, attempts=1, now=0.0, bucket=bucket,
                 call_deadline=0.1)
    assert bucket.available == 500


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"max_attempts": 1.5}, {"base_delay_s": -1}, {"multiplier": 0.5},
     {"max_delay_s": float("inf")}, {"jitter": "some"}, {"max_wall_s": 0}, {"jitter_s": float("nan")}],
)
def test_bad_policy_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)


@pytest.mark.parametrize("kwargs", [{"max_retries": -1}, {"max_wall_s": -5}])
def test_bad_run_budget_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RunBudget(**kwargs)


def test_bucket_is_safe_under_threads() -> None:
    import threading

    bucket = RetryTokenBucket(500)
    taken: list[int | None] = []

    def worker() -> None:
        for _ in range(100):
            taken.append(bucket.try_acquire())

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for t in taken if t) == 100  # exactly 500 / 5
    assert bucket.available == 0
