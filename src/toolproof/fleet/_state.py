"""Breakers and a retry token bucket that a fleet of workers shares, with a local fallback.

A `SharedState` hands the runner objects that satisfy the same small protocols as the local ones
(`orchestration.breaker.Breaker`, `orchestration.policy.RetryBucket`), so the pipeline does not know where
the state lives. Each decision is one atomic step in the backend (a Lua script in Redis, a transaction
under a row lock in PostgreSQL). When the backend cannot be reached, each worker falls back to its own
local breaker and bucket at once, logs one WARNING per outage, and tries the backend again every
`retry_s` seconds: the shared store never blocks a call for longer than its short timeouts.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

from ..orchestration.breaker import Admission, BreakerConfig, BreakerState, CircuitBreaker
from ..orchestration.policy import RetryTokenBucket

log = logging.getLogger("toolproof.fleet")


class Backend(Protocol):
    """One shared store: each method is one atomic decision there (times are the store's own clock)."""

    label: str
    errors: tuple[type[BaseException], ...]  # what "unreachable" looks like

    def admit(self, name: str, config: BreakerConfig, token: str) -> tuple[Admission, int]:
        """Admission (a granted trial is tagged `token`) and the fleet's consecutive failure count."""

    def record(self, name: str, config: BreakerConfig, failure: bool, token: str | None) -> int:
        """Record an outcome; the consecutive failure count after it (0 unless closed)."""

    def state(self, name: str, config: BreakerConfig) -> BreakerState: ...

    def take(self, name: str, capacity: int, cost: int, refund: int) -> int | None:
        """Add `refund` (capped), then take `cost` tokens: the tokens left, or None when too few."""

    def rate_take(self, name: str, tokens_per_s: float, burst: int) -> float | None:
        """A token from a refilling bucket (rate limits): None when taken, else the seconds until one is."""

    def reset(self, name: str) -> None: ...

    def close(self) -> None: ...


class Outage:
    """Is the backend usable now? One WARNING when it goes away, one INFO when it is back."""

    def __init__(self, label: str, retry_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.retry_s = retry_s
        self._clock = clock
        self._lock = threading.Lock()
        self.down_since: float | None = None
        self._last_try = 0.0
        self.outages = 0

    @property
    def degraded(self) -> bool:
        return self.down_since is not None

    def usable(self) -> bool:
        """Up, or down long enough that one call may try again."""
        if self.down_since is None:
            return True
        with self._lock:
            now = self._clock()
            if now - self._last_try < self.retry_s:
                return False
            self._last_try = now
            return True

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            if self.down_since is None:
                self.down_since = self._last_try = self._clock()
                self.outages += 1
                log.warning("shared state %s unreachable (%s: %s); workers use their local breakers and retry "
                            "quota until it is back", self.label, type(exc).__name__, exc)

    def succeeded(self) -> None:
        if self.down_since is None:
            return
        with self._lock:
            if self.down_since is not None:
                log.info("shared state %s reachable again after %.1f s", self.label, self._clock() - self.down_since)
                self.down_since = None


class SharedBreaker:
    """A breaker whose state lives in the backend; the local `CircuitBreaker` decides while it is away."""

    def __init__(self, name: str, config: BreakerConfig, backend: Backend, outage: Outage,
                 clock: Callable[[], float]) -> None:
        if config.window_s is not None:
            raise ValueError("shared breakers count consecutive failures; window_s is not supported with shared_state")
        self.name = name
        self.config = config
        self._backend = backend
        self._outage = outage
        self._local = CircuitBreaker(name, config, clock=clock)
        self._trial: str | None = None
        self._dirty = True  # the fleet's failure count may be above 0: a success must reset it

    @property
    def state(self) -> BreakerState:
        if self._outage.usable():
            try:
                state = self._backend.state(self.name, self.config)
            except self._backend.errors as exc:
                self._outage.failed(exc)
            else:
                self._outage.succeeded()
                return state
        return self._local.state

    def admit(self) -> Admission:
        if self._outage.usable():
            token = os.urandom(8).hex()
            try:
                admission, consecutive = self._backend.admit(self.name, self.config, token)
            except self._backend.errors as exc:
                self._outage.failed(exc)
            else:
                self._outage.succeeded()
                self._dirty = self._dirty or consecutive > 0
                if admission.trial:
                    self._trial = token
                return admission
        return self._local.admit()

    def record(self, failure: bool, trial: bool = False) -> None:
        if not (failure or trial or self._dirty):
            return  # the hot path: a success while the fleet counts no failures
        if self._outage.usable():
            token = self._trial if trial else None
            try:
                consecutive = self._backend.record(self.name, self.config, failure, token)
            except self._backend.errors as exc:
                self._outage.failed(exc)
            else:
                self._outage.succeeded()
                self._dirty = consecutive > 0
                return
        self._local.record(failure=failure, trial=trial)

    def reset(self) -> None:
        """Close the breaker for the whole fleet (an operator knows the upstream is back)."""
        self._backend.reset(self.name)
        self._local.reset()


class SharedBucket:
    """The retry token bucket with one fleet-wide quota.

    Small refunds (one token per plain success) are batched until they are worth one retry or `flush_s`
    passed, so a healthy fleet does not pay a round trip per call for them.
    """

    def __init__(self, name: str, local: RetryTokenBucket, backend: Backend, outage: Outage,
                 flush_s: float = 0.1) -> None:
        self.name = name
        self._local = local
        self._backend = backend
        self._outage = outage
        self._flush_s = flush_s
        self._lock = threading.Lock()
        self._pending = 0
        self._flushed_at = time.monotonic()

    @property
    def capacity(self) -> int:
        return self._local.capacity

    def try_acquire(self, *, timeout: bool = False) -> int | None:
        cost = self._local.timeout_cost if timeout else self._local.retry_cost
        left = self._apply(cost)
        if left is None:
            return self._local.try_acquire(timeout=timeout)
        return None if left < 0 else cost

    def on_success(self, last_retry_cost: int = 0) -> None:
        with self._lock:
            self._pending += last_retry_cost or self._local.success_refund
            due = self._pending >= self._local.retry_cost or time.monotonic() - self._flushed_at >= self._flush_s
        if due:
            self._apply(0)
        self._local.on_success(last_retry_cost)

    @property
    def available(self) -> int:
        """The fleet's tokens now (pending refunds included), or the local count while the backend is away."""
        left = self._apply(0)
        return self._local.available if left is None else left

    def _apply(self, cost: int) -> int | None:
        """Pay the pending refunds and take `cost`: the tokens left, -1 when too few, None when unreachable."""
        if not self._outage.usable():
            return None
        with self._lock:
            refund, self._pending = self._pending, 0
            self._flushed_at = time.monotonic()
        try:
            left = self._backend.take(self.name, self._local.capacity, cost, refund)
        except self._backend.errors as exc:
            with self._lock:
                self._pending += refund  # not paid: the next call that reaches the backend pays it
            self._outage.failed(exc)
            return None
        self._outage.succeeded()
        return -1 if left is None else left


class SharedRates:
    """Rate-limit buckets (refilling at a rate, up to a burst) that a fleet shares; while the backend is away,
    each process keeps its own buckets, so a limit still holds per process."""

    def __init__(self, backend: Backend, outage: Outage, clock: Callable[[], float] = time.monotonic,
                 max_local: int = 100_000) -> None:
        self._backend = backend
        self._outage = outage
        self._clock = clock
        self._max = max_local
        self._lock = threading.Lock()
        self._local: dict[str, tuple[float, float]] = {}  # name -> (tokens, at)

    def rate_take(self, key: str, tokens_per_s: float, burst: int) -> float | None:
        if self._outage.usable():
            try:
                wait = self._backend.rate_take(key, tokens_per_s, burst)
            except self._backend.errors as exc:
                self._outage.failed(exc)
            else:
                self._outage.succeeded()
                return wait
        return self._take_local(key, tokens_per_s, burst)

    def _take_local(self, key: str, tokens_per_s: float, burst: int) -> float | None:
        now = self._clock()
        with self._lock:
            tokens, at = self._local.pop(key, (float(burst), now))
            tokens = min(float(burst), tokens + (now - at) * tokens_per_s)
            wait = None if tokens >= 1.0 else (1.0 - tokens) / tokens_per_s
            self._local[key] = (tokens - 1.0 if wait is None else tokens, now)
            if len(self._local) > self._max:
                del self._local[next(iter(self._local))]
        return wait
