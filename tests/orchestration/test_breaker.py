"""The circuit breaker state machine, on an injected clock (no sleeping)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.orchestration.breaker import BreakerConfig, BreakerState, CircuitBreaker


class Now:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def make(**kwargs: float) -> tuple[CircuitBreaker, Now]:
    now = Now()
    return CircuitBreaker("prices", BreakerConfig(**kwargs), clock=now), now  # type: ignore[arg-type]


def fail(b: CircuitBreaker, n: int = 1) -> None:
    for _ in range(n):
        adm = b.admit()
        assert adm.allowed
        b.record(failure=True, trial=adm.trial)


def test_opens_after_consecutive_transient_failures() -> None:
    b, _ = make(failure_threshold=3, recovery_s=10)
    fail(b, 2)
    assert b.state is BreakerState.CLOSED
    fail(b)
    assert b.state is BreakerState.OPEN
    assert b.opened_count == 1
    adm = b.admit()
    assert not adm.allowed
    assert adm.retry_after_s == pytest.approx(10)


def test_a_success_or_a_non_transient_error_resets_the_count() -> None:
    b, _ = make(failure_threshold=3)
    fail(b, 2)
    b.record(failure=False)  # an upstream that says "not found" is up
    fail(b, 2)
    assert b.state is BreakerState.CLOSED


def test_retry_after_is_the_time_left() -> None:
    b, now = make(failure_threshold=1, recovery_s=30)
    fail(b)
    now.t += 12
    assert b.admit().retry_after_s == pytest.approx(18)


def test_half_open_lets_exactly_one_trial_through() -> None:
    b, now = make(failure_threshold=1, recovery_s=5)
    fail(b)
    now.t += 5
    assert b.state is BreakerState.HALF_OPEN
    trial = b.admit()
    assert trial.allowed and trial.trial
    other = b.admit()
    assert not other.allowed and other.retry_after_s > 0
    b.record(failure=False, trial=True)
    assert b.state is BreakerState.CLOSED
    assert b.admit().allowed


def test_failed_trial_opens_again_for_a_full_window() -> None:
    b, now = make(failure_threshold=1, recovery_s=5)
    fail(b)
    now.t += 6
    trial = b.admit()
    b.record(failure=True, trial=trial.trial)
    assert b.state is BreakerState.OPEN
    assert b.admit().retry_after_s == pytest.approx(5)
    assert b.opened_count == 2


def test_stale_news_from_before_the_open_is_ignored() -> None:
    b, now = make(failure_threshold=1, recovery_s=5)
    fail(b)
    b.record(failure=False)  # a call admitted earlier finishes while open: no effect
    assert b.state is BreakerState.OPEN
    now.t += 5
    b.admit()
    b.record(failure=False, trial=False)  # not the trial
    assert b.state is BreakerState.HALF_OPEN


def test_a_vanished_trial_expires() -> None:
    b, now = make(failure_threshold=1, recovery_s=5)
    fail(b)
    now.t += 5
    assert b.admit().trial  # its caller is cancelled and never reports
    now.t += 5
    assert b.admit().trial


def test_rate_over_a_window() -> None:
    b, now = make(failure_threshold=100, window_s=10, failure_rate=0.5, min_calls=4)
    for failure in (True, False, True):
        adm = b.admit()
        b.record(failure=failure, trial=adm.trial)
        now.t += 1
    assert b.state is BreakerState.CLOSED  # fewer than min_calls
    b.record(failure=True)
    assert b.state is BreakerState.OPEN  # 3 of 4 failed


def test_old_events_leave_the_window() -> None:
    b, now = make(failure_threshold=100, window_s=10, failure_rate=0.5, min_calls=4)
    for _ in range(3):
        b.record(failure=True)
    now.t += 11
    for _ in range(3):
        b.record(failure=False)
    b.record(failure=True)
    assert b.state is BreakerState.CLOSED  # 1 of 4 within the window


def test_reset_closes() -> None:
    b, _ = make(failure_threshold=1)
    fail(b)
    b.reset()
    assert b.state is BreakerState.CLOSED and b.admit().allowed


@pytest.mark.parametrize(
    "kwargs",
    [{"failure_threshold": 0}, {"recovery_s": 0}, {"window_s": -1}, {"failure_rate": 0}, {"failure_rate": 1.5},
     {"min_calls": 0}],
)
def test_bad_config_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        BreakerConfig(**kwargs)  # type: ignore[arg-type]


def test_one_trial_among_many_threads() -> None:
    b, now = make(failure_threshold=1, recovery_s=5)
    fail(b)
    now.t += 5
    trials: list[bool] = []
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        for _ in range(200):
            adm = b.admit()
            if adm.trial:
                trials.append(True)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert trials == [True]


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["call_ok", "call_fail", "tick"]), st.floats(0, 20)), min_size=1, max_size=60
    ),
    threshold=st.integers(1, 5),
)
def test_property_the_state_machine_never_dispatches_while_open(steps: list[tuple[str, float]], threshold: int) -> None:
    """Whatever happens: refused while open (with the time left), one trial at a time, open only after failures."""
    b, now = make(failure_threshold=threshold, recovery_s=10)
    consecutive = 0
    for what, dt in steps:
        if what == "tick":
            now.t += dt
            continue
        before = b.state
        adm = b.admit()
        if before is BreakerState.OPEN:
            assert not adm.allowed and 0 < adm.retry_after_s <= 10
            continue
        if not adm.allowed:
            assert before is BreakerState.HALF_OPEN
            continue
        failed = what == "call_fail"
        b.record(failure=failed, trial=adm.trial)
        consecutive = consecutive + 1 if failed else 0
        if adm.trial:
            assert b.state is (BreakerState.OPEN if failed else BreakerState.CLOSED)
            consecutive = 0
        elif b.state is BreakerState.OPEN:
            assert consecutive >= threshold
            consecutive = 0
