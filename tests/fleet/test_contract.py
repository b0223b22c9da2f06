"""One contract for every backend of the shared state: memory, Redis and PostgreSQL pass the same tests.

"Workers" are separate `SharedState`s (separate connections) on one URL; threads make them race.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from tests.fleet.conftest import Fleet
from toolproof.orchestration.breaker import Admission, Breaker, BreakerConfig, BreakerState

T = TypeVar("T")
FAST = BreakerConfig(failure_threshold=5, recovery_s=0.4, half_open_retry_after_s=0.05)


def race(calls: list[Callable[[], T]]) -> list[T]:
    """Run the calls at once, one thread each."""
    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(lambda call: call(), calls))


def opened(breakers: list[Breaker]) -> None:
    for b in breakers[: FAST.failure_threshold]:
        b.record(failure=True)


def test_failures_of_all_workers_count_toward_one_threshold(fleet: Fleet) -> None:
    workers = fleet.breakers(5, FAST)
    for b in workers[:4]:
        b.record(failure=True)
    assert all(b.admit().allowed for b in workers)
    workers[4].record(failure=True)
    refusals = [b.admit() for b in workers]
    assert not any(a.allowed for a in refusals)
    assert all(0 < a.retry_after_s <= FAST.recovery_s for a in refusals)
    assert all(b.state is BreakerState.OPEN for b in workers)


def test_a_success_anywhere_resets_the_count(fleet: Fleet) -> None:
    a, b, c = fleet.breakers(3, FAST)
    for _ in range(4):
        a.admit()
        a.record(failure=True)
    b.admit()
    b.record(failure=False)
    for _ in range(4):
        c.admit()
        c.record(failure=True)
    assert c.admit().allowed and a.state is BreakerState.CLOSED


def test_racing_failures_open_the_breaker_once_and_every_worker_sees_it(fleet: Fleet) -> None:
    workers = fleet.breakers(12, FAST)
    race([lambda b=b: b.record(failure=True) for b in workers])
    assert not any(b.admit().allowed for b in workers)
    time.sleep(FAST.recovery_s + 0.05)
    admissions = race([b.admit for b in workers])
    assert sum(a.trial for a in admissions) == 1  # opened once: one window, one trial for the fleet


def test_exactly_one_trial_per_recovery_window_for_the_fleet(fleet: Fleet) -> None:
    workers = fleet.breakers(10, FAST)
    opened(workers)
    time.sleep(FAST.recovery_s + 0.05)
    admissions: list[Admission] = race([b.admit for b in workers])
    trials = [i for i, a in enumerate(admissions) if a.allowed]
    assert len(trials) == 1 and admissions[trials[0]].trial
    refused = [a for a in admissions if not a.allowed]
    assert all(a.retry_after_s == FAST.half_open_retry_after_s for a in refused)
    # The trial fails: open again for a whole window, then again exactly one trial.
    workers[trials[0]].record(failure=True, trial=True)
    assert not any(b.admit().allowed for b in workers)
    time.sleep(FAST.recovery_s + 0.05)
    second = race([b.admit for b in workers])
    winner = next(i for i, a in enumerate(second) if a.allowed)
    assert sum(a.allowed for a in second) == 1
    # The trial succeeds: closed for everybody.
    workers[winner].record(failure=False, trial=True)
    assert all(b.admit().allowed for b in workers)
    assert all(b.state is BreakerState.CLOSED for b in workers)


def test_a_stale_trial_expires_and_its_late_news_is_ignored(fleet: Fleet) -> None:
    first, second, third = fleet.breakers(3, FAST)
    opened([first] * FAST.failure_threshold)
    time.sleep(FAST.recovery_s + 0.05)
    assert first.admit().trial
    assert not second.admit().allowed  # the trial is running
    time.sleep(FAST.recovery_s + 0.05)  # its caller vanished: the trial expires
    assert second.admit().trial
    if fleet.url is not None:  # in one process the breaker cannot tell the two trials apart
        first.record(failure=False, trial=True)  # the expired trial reports late: stale, ignored
        assert third.state is BreakerState.HALF_OPEN
    second.record(failure=True, trial=True)
    assert third.state is BreakerState.OPEN


def test_the_retry_quota_is_fleet_wide(fleet: Fleet) -> None:
    buckets = fleet.buckets(6, capacity=50, retry_cost=5, success_refund=1)
    taken = race([lambda b=b: [b.try_acquire() for _ in range(4)] for b in buckets])
    granted = [t for row in taken for t in row if t is not None]
    assert len(granted) == 10 and all(t == 5 for t in granted)  # 50 tokens pay for 10 retries, fleet-wide


def test_refunds_come_back_to_the_fleet_quota(fleet: Fleet) -> None:
    a, b = fleet.buckets(2, capacity=10, retry_cost=5, success_refund=1)
    assert a.try_acquire() == 5 and a.try_acquire() == 5
    assert b.try_acquire() is None  # a's retries spent the fleet's quota
    a.on_success(5)  # a retried call succeeded: the cost of its retry comes back to the fleet at once
    assert b.try_acquire() == 5
    assert b.try_acquire() is None
    for _ in range(5):  # plain successes refund one token each, batched until they pay for one retry
        a.on_success()
    assert b.try_acquire() == 5
