"""Retry policy, budgets and the retry token bucket: pure decisions, no I/O, no sleeping.

The runner asks one question after a failed attempt, `decide_retry(...)`, and gets back either "retry after
this many seconds" or "stop, for this reason". Everything that question depends on is a plain value here:
the policy (attempts, backoff, jitter, the per-call wall budget), the run's budget and the process-wide
token bucket (the AWS SDK "standard" retry mode), so a test can drive it without a clock or a handler.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Literal, Protocol

from ..contract._errors import CLASS_SPECS, ErrorClass

Jitter = Literal["full", "half", "none"]


class StopReason(StrEnum):
    """Why the orchestrator gave up on a call (the `reason` of a stop record)."""

    BUDGET_EXHAUSTED = "budget_exhausted"  # the call's attempts or wall clock are spent
    RUN_BUDGET_EXHAUSTED = "run_budget_exhausted"  # the run's retries or wall clock are spent
    RETRY_QUOTA_EXCEEDED = "retry_quota_exceeded"  # the process-wide token bucket is empty
    RETRY_AFTER_TOO_LONG = "retry_after_too_long"  # the upstream asked for a wait the budgets do not allow
    HIGH_RISK = "high_risk"  # a high-risk write failed transiently: escalate at once
    NOT_IDEMPOTENT = "not_idempotent"  # a write that may not be repeated failed transiently
    NON_RETRYABLE = "non_retryable"  # the class says escalate (auth, permission, internal)
    OUTCOME_UNKNOWN = "outcome_unknown"  # a write may or may not have run: a person reconciles its key
    CIRCUIT_OPEN = "circuit_open"  # the breaker refused the call
    REPEAT_GUARD = "repeat_guard"  # an identical repeat of a call that just failed
    FAILURE_LIMIT = "failure_limit"  # too many failures of one tool within a run or conversation


#: What the model is told when the orchestrator stops retrying (the envelope's `hint`); `{tries}` ("3 times"),
#: `{retries}` ("2 retries") and `{retry_after}` (seconds) are filled in by `stop_hint`.
STOP_HINTS: Final = {
    StopReason.BUDGET_EXHAUSTED: "Tried {tries} ({retries}) and it still fails. Do not call it again for this "
    "request; tell the person it is unavailable now, or hand over.",
    StopReason.RUN_BUDGET_EXHAUSTED: "This run has used its retry budget. Do not call it again; hand over to a "
    "person.",
    StopReason.RETRY_QUOTA_EXCEEDED: "Too many retries are failing across all agents right now. Do not call it "
    "again for this request; hand over or try much later.",
    StopReason.RETRY_AFTER_TOO_LONG: "The service asked to wait {retry_after} s, longer than this call may wait. "
    "Do not call it again now; tell the person when it can be tried again.",
    StopReason.HIGH_RISK: "A high-risk action failed; it is not retried automatically. Hand over to a person.",
    StopReason.NOT_IDEMPOTENT: "This action may not be repeated automatically. Hand over to a person.",
}


def stop_hint(reason: StopReason | None, *, attempts: int, retry_after_s: float | None) -> str | None:
    """The hint for a stop after `attempts` attempts (exact counts: 3 attempts are 2 retries), or None."""
    template = STOP_HINTS.get(reason) if reason is not None else None
    if template is None:
        return None
    tries = "once" if attempts == 1 else f"{attempts} times"
    retries = {0: "no retry", 1: "1 retry"}.get(attempts - 1, f"{attempts - 1} retries")
    retry_after = "?" if retry_after_s is None else f"{retry_after_s:.0f}"
    return template.format(tries=tries, retries=retries, retry_after=retry_after)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How one call is retried: attempts in all, exponential backoff with jitter, a per-call wall budget.

    Delay before retry `n` (1 = the first retry) is `min(max_delay_s, base_delay_s * multiplier**(n-1))`,
    then jittered: `"half"` (default) picks uniformly in [d/2, d], `"full"` in [0, d], `"none"` keeps d;
    `jitter_s` adds up to that many seconds on top (urllib3's `backoff_jitter`), still capped.
    A Retry-After from the upstream is authoritative: it replaces the computed delay, uncapped, and if it
    does not fit the budgets the call stops and says so. `max_wall_s` bounds the whole call, waits included.
    """

    max_attempts: int = 3
    base_delay_s: float = 1.0
    multiplier: float = 2.0
    max_delay_s: float = 20.0
    jitter: Jitter = "half"
    jitter_s: float = 0.0
    max_wall_s: float | None = 60.0

    def __post_init__(self) -> None:
        if not (isinstance(self.max_attempts, int) and self.max_attempts >= 1):
            raise ValueError("max_attempts must be an integer >= 1 (1 means: never retry)")
        for name in ("base_delay_s", "max_delay_s", "jitter_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0")
        if not (isinstance(self.multiplier, int | float) and math.isfinite(self.multiplier) and self.multiplier >= 1):
            raise ValueError("multiplier must be a finite number >= 1")
        if self.jitter not in ("full", "half", "none"):
            raise ValueError("jitter must be 'full', 'half' or 'none'")
        if self.max_wall_s is not None and not (math.isfinite(self.max_wall_s) and self.max_wall_s > 0):
            raise ValueError("max_wall_s must be a positive number or None")

    def backoff(self, retry: int, rand: float = 1.0) -> float:
        """Seconds to wait before retry number `retry` (>= 1); `rand` in [0, 1) drives the jitter."""
        exponent = max(retry - 1, 0)
        # Guard the power against overflow: past the cap it no longer matters.
        if self.base_delay_s == 0:
            delay = 0.0
        elif exponent * math.log2(max(self.multiplier, 1.0)) > 1023:
            delay = self.max_delay_s
        else:
            delay = min(self.max_delay_s, self.base_delay_s * self.multiplier**exponent)
        if self.jitter == "full":
            delay *= rand
        elif self.jitter == "half":
            delay *= 0.5 + 0.5 * rand
        if self.jitter_s:
            delay = min(delay + rand * self.jitter_s, self.max_delay_s)
        return delay


@dataclass(frozen=True, slots=True)
class RunBudget:
    """Limits across all calls of one agent run (`CallContext.run_id`): total retries and wall clock.

    Non-retryable errors spend nothing; only retries (and time) do.
    """

    max_retries: int | None = 20
    max_wall_s: float | None = 600.0

    def __post_init__(self) -> None:
        if self.max_retries is not None and not (isinstance(self.max_retries, int) and self.max_retries >= 0):
            raise ValueError("max_retries must be an integer >= 0 or None")
        if self.max_wall_s is not None and not (math.isfinite(self.max_wall_s) and self.max_wall_s > 0):
            raise ValueError("max_wall_s must be a positive number or None")


class RunState:
    """What one run has spent so far (kept by the runner, per run id)."""

    __slots__ = ("retries", "started_at")

    def __init__(self, started_at: float) -> None:
        self.started_at = started_at
        self.retries = 0


class RetryBucket(Protocol):
    """What `decide_retry` asks of a retry quota: `RetryTokenBucket`, or one a fleet shares (toolproof.fleet)."""

    def try_acquire(self, *, timeout: bool = False) -> int | None: ...

    def on_success(self, last_retry_cost: int = 0) -> None: ...


class RetryTokenBucket:
    """The AWS SDK "standard" retry quota, shared by every call the owner runs.

    Each retry takes `retry_cost` tokens (`timeout_cost` after a timeout); with too few tokens there is no
    retry. A success gives back the cost of its own last retry, or `success_refund` when it needed none.
    A fleet of agents behind one bucket cannot turn an outage into a retry storm.
    """

    __slots__ = ("_lock", "_tokens", "capacity", "retry_cost", "success_refund", "timeout_cost")

    def __init__(
        self, capacity: int = 500, *, retry_cost: int = 5, timeout_cost: int = 10, success_refund: int = 1,
        initial: int | None = None,
    ) -> None:
        if min(capacity, retry_cost, timeout_cost, success_refund) < 0:
            raise ValueError("token bucket sizes and costs must be >= 0")
        self.capacity = capacity
        self.retry_cost = retry_cost
        self.timeout_cost = timeout_cost
        self.success_refund = success_refund
        self._tokens = capacity if initial is None else min(initial, capacity)
        self._lock = threading.Lock()

    @property
    def available(self) -> int:
        return self._tokens

    def try_acquire(self, *, timeout: bool = False) -> int | None:
        """Take the cost of one retry; the number taken, or None when the bucket cannot pay."""
        cost = self.timeout_cost if timeout else self.retry_cost
        with self._lock:
            if self._tokens < cost:
                return None
            self._tokens -= cost
        return cost

    def on_success(self, last_retry_cost: int = 0) -> None:
        """A call succeeded: refund its last retry's cost, or the small success refund."""
        refund = last_retry_cost or self.success_refund
        if refund and self._tokens < self.capacity:
            with self._lock:
                self._tokens = min(self.capacity, self._tokens + refund)


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """Retry after `delay_s`, or stop; `reason` says why a retryable failure is not retried."""

    retry: bool
    delay_s: float = 0.0
    reason: StopReason | None = None
    tokens: int = 0


_NO: Final = RetryDecision(False)


def decide_retry(
    policy: RetryPolicy,
    *,
    error_class: ErrorClass,
    attempts: int,
    now: float,
    effect: Literal["read", "write"] = "read",
    idempotent: bool = True,
    risk: Literal["low", "high"] = "low",
    retry_after_s: float | None = None,
    timed_out: bool = False,
    call_deadline: float | None = None,
    run: RunState | None = None,
    run_budget: RunBudget | None = None,
    bucket: RetryBucket | None = None,
    rand: float = 1.0,
) -> RetryDecision:
    """After `attempts` failed attempts ending in `error_class`: retry (and when), or stop (and why).

    Order matters and is the contract: a class that is not retryable is never retried and spends nothing;
    a high-risk tool and a write that may not be repeated stop at once; then the call's attempts, the
    delay (Retry-After wins) against the call's and the run's wall budgets, the run's retry count, and last
    the token bucket, so that tokens are only taken for a retry that will happen.
    """
    if not CLASS_SPECS[error_class].retryable:
        return _NO
    if effect == "write" and risk == "high":
        return RetryDecision(False, reason=StopReason.HIGH_RISK)
    if effect == "write" and not idempotent:
        return RetryDecision(False, reason=StopReason.NOT_IDEMPOTENT)
    if attempts >= policy.max_attempts:
        return RetryDecision(False, reason=StopReason.BUDGET_EXHAUSTED)
    delay = retry_after_s if retry_after_s is not None else policy.backoff(attempts, rand)
    too_long = StopReason.RETRY_AFTER_TOO_LONG if retry_after_s is not None else None
    if call_deadline is not None and now + delay >= call_deadline:
        return RetryDecision(False, reason=too_long or StopReason.BUDGET_EXHAUSTED)
    if run is not None and run_budget is not None:
        if run_budget.max_retries is not None and run.retries >= run_budget.max_retries:
            return RetryDecision(False, reason=StopReason.RUN_BUDGET_EXHAUSTED)
        if run_budget.max_wall_s is not None and now + delay >= run.started_at + run_budget.max_wall_s:
            return RetryDecision(False, reason=too_long or StopReason.RUN_BUDGET_EXHAUSTED)
    tokens = 0
    if bucket is not None:
        taken = bucket.try_acquire(timeout=timed_out)
        if taken is None:
            return RetryDecision(False, reason=StopReason.RETRY_QUOTA_EXCEEDED)
        tokens = taken
    return RetryDecision(True, delay_s=delay, tokens=tokens)
