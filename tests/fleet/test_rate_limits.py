"""Fleet-wide rate-limit buckets (the gateway's `shared = true` limits) on the real Redis and PostgreSQL: two
workers draw from one bucket, refilled by the store's clock; while the store is away each keeps its own."""

from __future__ import annotations

import time

from toolproof.fleet import open_shared_state
from toolproof.mcp._limits import Limiter, LimitRule


def test_two_gateways_share_one_bucket(shared_url: str) -> None:
    a, b = open_shared_state(shared_url), open_shared_state(shared_url)
    try:
        rule = LimitRule("fleet", rate=1, period_s=60, burst=3, shared=True)
        la = Limiter([rule], shared=a.rate_limits())
        lb = Limiter([rule], shared=b.rate_limits())
        granted = [la.check("alice", "t", "u"), lb.check("alice", "t", "u"), la.check("alice", "t", "u")]
        assert granted == [None, None, None]
        refused = lb.check("alice", "t", "u")
        assert refused is not None and refused.code == "GATEWAY_RATE_LIMITED"
        assert 55 < (refused.retry_after_s or 0) <= 60  # a token per minute: about a minute to wait
        assert la.check("bob", "t", "u") is None  # per caller, fleet-wide too
        assert not a.degraded and not b.degraded
    finally:
        a.close()
        b.close()


def test_the_bucket_refills_by_the_stores_clock(shared_url: str) -> None:
    state = open_shared_state(shared_url)
    try:
        rates = state.rate_limits()
        assert rates is not None
        assert rates.rate_take("k", 20.0, 1) is None
        wait = rates.rate_take("k", 20.0, 1)
        assert wait is not None and 0 < wait <= 0.05
        time.sleep(0.08)
        assert rates.rate_take("k", 20.0, 1) is None
    finally:
        state.close()


def test_with_the_store_away_each_worker_limits_alone() -> None:
    state = open_shared_state("redis://127.0.0.1:1/0")  # nothing listens there
    try:
        limiter = Limiter([LimitRule("r", rate=1, period_s=60, burst=2, shared=True)], shared=state.rate_limits())
        assert limiter.check("alice", "t", "u") is None
        assert limiter.check("alice", "t", "u") is None
        assert limiter.check("alice", "t", "u") is not None
        assert state.degraded
    finally:
        state.close()
