"""The Runner as orchestrator: retries, budgets, breakers, fallbacks, the loop guard, timeouts, stop records.

Time is a fake clock injected into the Runner (sleeps advance it), except in the few real-time timeout tests.
Handlers are real functions that fail as scripted; nothing of the Runner is mocked.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolproof
from toolproof import CallContext, Runner, Tool, Toolset
from toolproof.contract._errors import (
    AuthFailed,
    Conflict,
    InternalError,
    NotFound,
    RateLimited,
    TransientUpstream,
)
from toolproof.orchestration.breaker import BreakerConfig, BreakerState
from toolproof.orchestration.guard import LoopGuard
from toolproof.orchestration.policy import RetryPolicy, RetryTokenBucket, RunBudget
from toolproof.pipeline._runner import Clock
from toolproof.stores import MemoryStore

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}


class FakeClock:
    """Monotonic time that only moves when someone sleeps or a handler says it took time."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def clock(self) -> Clock:
        return Clock(self.monotonic, self.sleep, self.async_sleep)


class Scripted:
    """A handler that answers from a script (values, or exceptions to raise); the last step repeats."""

    def __init__(self, *script: Any, clock: FakeClock | None = None, takes_s: float = 0.0) -> None:
        self.script = list(script) or [{"ok": True}]
        self.calls: list[tuple[dict[str, Any], int]] = []
        self.clock = clock
        self.takes_s = takes_s

    def __call__(self, args: dict[str, Any], ctx: CallContext) -> Any:
        self.calls.append((args, ctx.attempt))
        if self.clock is not None:
            self.clock.t += self.takes_s
        step = self.script[min(len(self.calls), len(self.script)) - 1]
        if isinstance(step, BaseException):
            raise step
        return step


def tool(name: str, handler: Any, **kwargs: Any) -> Tool:
    kwargs.setdefault("effect", "read")
    return Tool.from_schema(name, f"The {name} tool.", SCHEMA, handler, **kwargs)


def runner(*tools: Tool, fake: FakeClock | None = None, **kwargs: Any) -> Runner:
    kwargs.setdefault("rng", lambda: 1.0)  # no jitter taken off: delays are exact
    return Runner(Toolset(list(tools)), clock=(fake or FakeClock()).clock(), **kwargs)


def down() -> TransientUpstream:
    return TransientUpstream("The price service answered 503.", code="HTTP_503")


# --- retries -------------------------------------------------------------------------------------------------


def test_a_read_is_retried_with_backoff_then_succeeds() -> None:
    fake = FakeClock()
    handler = Scripted(down(), down(), {"price": 41})
    r = runner(tool("get_price", handler), fake=fake)
    env = r.call_sync("get_price", {"q": "onion"})
    assert env.ok and env.result == {"price": 41}
    assert env.meta.attempts == 3
    assert fake.sleeps == [1.0, 2.0]
    assert [attempt for _, attempt in handler.calls] == [1, 2, 3]
    r.close()
    records = r.store.list_audit()
    assert [(rec.attempt, rec.outcome) for rec in reversed(records)] == [(1, "error"), (2, "error"), (3, "ok")]


def test_half_jitter_takes_at_most_half_off() -> None:
    fake = FakeClock()
    r = runner(tool("get_price", Scripted(down(), down(), {})), fake=fake, rng=lambda: 0.0)
    assert r.call_sync("get_price", {}).ok
    assert fake.sleeps == [0.5, 1.0]


def test_exhausted_budget_keeps_the_class_and_escalates_with_a_stop_record() -> None:
    fake = FakeClock()
    handler = Scripted(down())
    r = runner(tool("get_price", handler), fake=fake)
    ctx = CallContext(conversation_id="chat-1", run_id="run-1")
    env = r.call_sync("get_price", {"q": "onion"}, context=ctx)
    assert not env.ok and env.error is not None
    assert env.error.error_class == "transient_upstream"
    assert env.error.retryable is True
    assert env.error.next_action == "escalate"
    assert env.meta.attempts == 3
    assert len(handler.calls) == 3
    stop = r.store.get_stop(env.meta.extra["stop_id"])
    assert stop is not None
    assert stop.reason == "budget_exhausted" == env.meta.extra["stop_reason"]
    assert (stop.tool, stop.error_class, stop.code, stop.attempts) == ("get_price", "transient_upstream", "HTTP_503", 3)
    assert (stop.run_id, stop.conversation_id, stop.effect_status) == ("run-1", "chat-1", "not_done")
    assert stop.arguments == {"q": "onion"}
    assert env.to_dict()["meta"]["stop_id"] == stop.id  # on the wire too


def test_non_retryable_errors_are_not_retried_and_spend_nothing() -> None:
    bucket = RetryTokenBucket()
    handler = Scripted(NotFound("No such crop.", field="q"))
    r = runner(tool("get_price", handler), retry_bucket=bucket)
    env = r.call_sync("get_price", {"q": "x"}, context=CallContext(run_id="r"))
    assert env.error is not None and env.error.next_action == "repair"  # the model repairs; no stop
    assert "stop_id" not in env.meta.extra
    assert len(handler.calls) == 1 and env.meta.attempts == 1
    assert bucket.available == 500
    assert r.store.list_stops() == []


@pytest.mark.parametrize("exc", [AuthFailed("bad key"), InternalError("boom"), ValueError("surprise")])
def test_escalating_classes_write_a_stop(exc: Exception) -> None:
    handler = Scripted(exc)
    r = runner(tool("get_price", handler))
    env = r.call_sync("get_price", {})
    assert env.error is not None and env.error.next_action == "escalate"
    assert len(handler.calls) == 1
    stop = r.store.get_stop(env.meta.extra["stop_id"])
    assert stop is not None and stop.reason == "non_retryable"


def test_retry_after_is_authoritative() -> None:
    fake = FakeClock()
    r = runner(tool("get_price", Scripted(RateLimited("slow down", retry_after_s=7.5), {})), fake=fake)
    env = r.call_sync("get_price", {})
    assert env.ok and fake.sleeps == [7.5]


def test_retry_after_beyond_the_budget_stops_and_says_so() -> None:
    fake = FakeClock()
    handler = Scripted(RateLimited("slow down", retry_after_s=600))
    r = runner(tool("get_price", handler), fake=fake, retry=RetryPolicy(max_wall_s=60))
    env = r.call_sync("get_price", {})
    assert env.error is not None
    assert env.error.error_class == "rate_limited" and env.error.retry_after_s == 600
    assert env.error.next_action == "escalate"
    assert env.meta.extra["stop_reason"] == "retry_after_too_long"
    assert "600 s" in (env.error.hint or "")  # and says so
    assert fake.sleeps == [] and len(handler.calls) == 1


def test_per_call_wall_budget_counts_handler_time_and_waits() -> None:
    fake = FakeClock()
    handler = Scripted(down(), clock=fake, takes_s=0.5)
    r = runner(tool("get_price", handler), fake=fake, retry=RetryPolicy(max_attempts=10, max_wall_s=2.5,
                                                                        jitter="none"))
    env = r.call_sync("get_price", {})
    # 0.5 (attempt) + 1 (wait) + 0.5 (attempt) = 2.0; the next wait of 2 s would end past 2.5.
    assert env.meta.attempts == 2
    assert env.meta.extra["stop_reason"] == "budget_exhausted"
    assert fake.t - 1000.0 <= 2.5


def test_run_budget_spans_calls() -> None:
    fake = FakeClock()
    handler = Scripted(down())
    r = runner(tool("get_price", handler), fake=fake, budget=RunBudget(max_retries=3), breakers=None)
    ctx = CallContext(run_id="agent-run-7")
    first = r.call_sync("get_price", {"q": "a"}, context=ctx)
    second = r.call_sync("get_price", {"q": "b"}, context=ctx)
    assert first.meta.attempts == 3  # 2 retries spent
    assert second.meta.attempts == 2  # 1 left
    assert second.meta.extra["stop_reason"] == "run_budget_exhausted"
    other_run = r.call_sync("get_price", {"q": "c"}, context=CallContext(run_id="another"))
    assert other_run.meta.attempts == 3


def test_run_wall_budget() -> None:
    fake = FakeClock()
    r = runner(tool("get_price", Scripted(down(), {}, down())), fake=fake, budget=RunBudget(max_wall_s=10))
    ctx = CallContext(run_id="r")
    assert r.call_sync("get_price", {}, context=ctx).ok
    fake.t += 9.5
    env = r.call_sync("get_price", {"q": "later"}, context=ctx)
    assert env.meta.extra["stop_reason"] == "run_budget_exhausted"


def test_token_bucket_is_shared_across_calls_and_runners() -> None:
    bucket = RetryTokenBucket(500, initial=10)
    fake = FakeClock()
    h1, h2 = Scripted(down()), Scripted(down())
    r1 = runner(tool("get_price", h1), fake=fake, retry_bucket=bucket)
    r2 = runner(tool("get_price", h2), fake=fake, retry_bucket=bucket)
    r1.call_sync("get_price", {})  # two retries: 10 tokens
    env = r2.call_sync("get_price", {})
    assert env.meta.attempts == 1 and env.meta.extra["stop_reason"] == "retry_quota_exceeded"
    assert bucket.available == 0


# --- writes ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("exc", [TimeoutError(), ConnectionResetError(), down()])
def test_a_non_idempotent_write_is_never_retried(exc: Exception) -> None:
    handler = Scripted(exc)
    r = runner(tool("send_payment", handler, effect="write", idempotent=False))
    env = r.call_sync("send_payment", {"q": "500 rs"}, context=CallContext(idempotency_key="k-1"))
    assert len(handler.calls) == 1
    assert env.error is not None
    assert env.error.error_class == "outcome_unknown"
    assert env.error.next_action == "escalate"
    stop = r.store.get_stop(env.meta.extra["stop_id"])
    # The key is built by the runner; the one in the context (anyone's) is ignored.
    assert stop is not None and stop.effect_status == "unknown" and stop.idempotency_key == env.meta.idempotency_key
    assert env.meta.idempotency_key is not None and env.meta.idempotency_key.startswith("tp1_")


def test_a_non_idempotent_write_that_was_throttled_is_known_not_done() -> None:
    handler = Scripted(RateLimited("429", retry_after_s=1))
    r = runner(tool("send_payment", handler, effect="write", idempotent=False))
    env = r.call_sync("send_payment", {})
    assert len(handler.calls) == 1
    assert env.error is not None and env.error.error_class == "rate_limited"
    assert env.meta.extra["stop_reason"] == "not_idempotent"
    stop = r.store.get_stop(env.meta.extra["stop_id"])
    assert stop is not None and stop.effect_status == "not_done"


def test_a_write_whose_raiser_says_nothing_was_done_is_sent_again_once_accepted() -> None:
    handler = Scripted(RateLimited("429", retry_after_s=1, effect_done=False), {"payment": 1})
    r = runner(tool("send_payment", handler, effect="write", idempotent=False))
    env = r.call_sync("send_payment", {}, context=CallContext(conversation_id="c"))
    assert env.ok and len(handler.calls) == 2 and env.meta.attempts == 2


def test_an_idempotent_write_is_retried() -> None:
    handler = Scripted(down(), {"order_id": 7})
    r = runner(tool("place_order", handler, effect="write", idempotent=True))
    env = r.call_sync("place_order", {})
    assert env.ok and len(handler.calls) == 2


def test_an_idempotent_write_whose_reply_was_lost_is_retried_and_its_give_up_says_unknown() -> None:
    handler = Scripted(TimeoutError(), TimeoutError(), TimeoutError())
    r = runner(tool("place_order", handler, effect="write", idempotent=True))
    env = r.call_sync("place_order", {}, context=CallContext(idempotency_key="k-9"))
    assert len(handler.calls) == 3
    assert env.error is not None and env.error.error_class == "transient_upstream"
    assert env.error.next_action == "escalate"
    stop = r.store.get_stop(env.meta.extra["stop_id"])
    assert stop is not None and stop.effect_status == "unknown" and stop.idempotency_key == env.meta.idempotency_key
    assert env.meta.idempotency_key is not None and env.meta.idempotency_key.startswith("tp1_")


def test_a_high_risk_write_escalates_at_once() -> None:
    handler = Scripted(down(), {"cancelled": True})
    r = runner(tool("cancel_order", handler, effect="write", idempotent=True, risk="high"))
    env = r.call_sync("cancel_order", {})
    assert len(handler.calls) == 1
    assert env.error is not None and env.error.next_action == "escalate"
    assert env.meta.extra["stop_reason"] == "high_risk"
    stop = r.store.get_stop(env.meta.extra["stop_id"])
    assert stop is not None and stop.effect_status == "unknown"


def test_wholesaler_timeout_after_commit_is_outcome_unknown(shop: Any, buyer: CallContext) -> None:
    """The article's incident: the order is committed, the reply is lost. One order, not two."""
    from toolproof.examples.wholesaler import build_toolset

    real = build_toolset(shop).get("place_order")

    def commit_then_time_out(args: dict[str, Any], ctx: CallContext) -> Any:
        _, kwargs = real.bind(real.parse_arguments(args), ctx)
        real.handler(**kwargs)  # the order is committed...
        raise TimeoutError("reply lost")  # ...and the reply is lost

    lossy = Tool.from_schema("place_order", real.description, real.input_schema, commit_then_time_out,
                             effect="write", idempotent=False)
    r = Runner(Toolset([lossy]), clock=FakeClock().clock())
    env = r.call_sync("place_order", {"crop": "groundnut", "quantity_kg": 40, "delivery_date": "2026-10-23"},
                      context=buyer)
    assert env.error is not None and env.error.error_class == "outcome_unknown"
    assert shop.count_orders() == 1


# --- breaker and fallback ---------------------------------------------------------------------------------------


def test_breaker_opens_refuses_without_dispatch_then_closes_after_a_trial() -> None:
    fake = FakeClock()
    handler = Scripted(down(), down(), down(), {"price": 1})
    r = runner(tool("get_price", handler), fake=fake, retry=None,
               breakers=BreakerConfig(failure_threshold=3, recovery_s=10))
    for _ in range(3):
        r.call_sync("get_price", {})
    breaker = r.breaker("get_price")
    assert breaker is not None and breaker.state is BreakerState.OPEN
    fake.t += 4
    env = r.call_sync("get_price", {})
    assert len(handler.calls) == 3  # not dispatched
    assert env.error is not None
    assert (env.error.error_class, env.error.code) == ("transient_upstream", "CIRCUIT_OPEN")
    assert env.error.retry_after_s == pytest.approx(6)
    assert env.meta.extra["stop_reason"] == "circuit_open"
    assert env.meta.attempts == 0
    fake.t += 6
    assert r.call_sync("get_price", {}).ok  # the half-open trial
    assert breaker.state is BreakerState.CLOSED


def test_breaker_is_per_upstream() -> None:
    a = tool("get_price", Scripted(down()), upstream="mandi-api")
    b_handler = Scripted({"stock": 1})
    b = tool("check_stock", b_handler, upstream="mandi-api")
    r = runner(a, b, retry=None, breakers=BreakerConfig(failure_threshold=2))
    r.call_sync("get_price", {})
    r.call_sync("get_price", {})
    env = r.call_sync("check_stock", {})
    assert env.error is not None and env.error.code == "CIRCUIT_OPEN"
    assert b_handler.calls == []


def test_breakers_by_name_and_off() -> None:
    handler = Scripted(down())
    r = runner(tool("get_price", handler), tool("other", Scripted(down())), retry=None,
               breakers={"get_price": BreakerConfig(failure_threshold=1)})
    assert r.breaker("other") is None
    r.call_sync("get_price", {})
    assert r.call_sync("get_price", {}).error.code == "CIRCUIT_OPEN"  # type: ignore[union-attr]
    off = runner(tool("get_price", Scripted(down())), retry=None, breakers=None)
    for _ in range(10):
        assert off.call_sync("get_price", {}).error.code == "HTTP_503"  # type: ignore[union-attr]


def test_a_read_only_fallback_is_called_automatically() -> None:
    cached = Scripted({"price": 40, "stale": True})
    live = tool("get_live_price", Scripted(down()), fallback="get_cached_price")
    r = runner(live, tool("get_cached_price", cached), retry=None, breakers=BreakerConfig(failure_threshold=1))
    first = r.call_sync("get_live_price", {"q": "onion"})  # fails, then the fallback answers
    assert first.ok and first.meta.tool == "get_cached_price"
    assert first.meta.extra["fallback_from"] == "get_live_price"
    second = r.call_sync("get_live_price", {"q": "onion"})  # breaker open: straight to the fallback
    assert second.ok and second.meta.extra["fallback_from"] == "get_live_price"
    assert cached.calls == [({"q": "onion"}, 1), ({"q": "onion"}, 1)]


def test_a_failure_that_opens_the_breaker_skips_the_backoff_wait() -> None:
    fake = FakeClock()
    live = tool("get_live_price", Scripted(down()), fallback="get_cached_price")
    r = runner(live, tool("get_cached_price", Scripted({"price": 40})), fake=fake,
               breakers=BreakerConfig(failure_threshold=1, recovery_s=30))
    env = r.call_sync("get_live_price", {"q": "onion"})
    assert env.ok and env.meta.extra["fallback_from"] == "get_live_price"
    assert fake.sleeps == []  # a retry could only be refused by the open breaker: no wait before the fallback


def test_a_write_only_gets_the_fallback_named_in_the_hint() -> None:
    backup = Scripted({"queued": True})
    write = tool("place_order", Scripted(down()), effect="write", idempotent=True, fallback="queue_order")
    r = runner(write, tool("queue_order", backup, effect="read"), retry=None,
               breakers=BreakerConfig(failure_threshold=1))
    r.call_sync("place_order", {})
    env = r.call_sync("place_order", {})
    assert env.error is not None and env.error.code == "CIRCUIT_OPEN"
    assert "queue_order" in (env.error.hint or "")
    assert backup.calls == []


# --- the loop guard ------------------------------------------------------------------------------------------


def test_an_identical_repeat_of_a_failing_call_is_not_dispatched() -> None:
    handler = Scripted(NotFound("No such crop.", field="q"))
    r = runner(tool("get_price", handler))
    ctx = CallContext(conversation_id="chat-9")
    first = r.call_sync("get_price", {"q": "cumin"}, context=ctx)
    again = r.call_sync("get_price", {"q": "cumin"}, context=ctx)
    assert first.error is not None and first.error.next_action == "repair"
    assert again.error is not None
    assert again.error.code == "REPEATED_FAILING_CALL"
    assert again.error.error_class == "not_found" and again.error.next_action == "escalate"
    assert again.meta.extra["stop_reason"] == "repeat_guard"
    assert len(handler.calls) == 1
    assert r.call_sync("get_price", {"q": "jeera"}, context=ctx).error.code == "NOT_FOUND"  # type: ignore[union-attr]
    other_chat = r.call_sync("get_price", {"q": "cumin"}, context=CallContext(conversation_id="chat-10"))
    assert other_chat.error is not None and other_chat.error.code == "NOT_FOUND"


def test_repeated_invalid_arguments_are_caught_too() -> None:
    r = runner(tool("get_price", Scripted()))
    ctx = CallContext(run_id="r")
    assert r.call_sync("get_price", '{"q": 5}', context=ctx).error.code == "WRONG_TYPE"  # type: ignore[union-attr]
    env = r.call_sync("get_price", '{"q": 5}', context=ctx)
    assert env.error is not None and env.error.code == "REPEATED_FAILING_CALL"
    assert env.error.field == "q"


def test_json_text_and_objects_are_the_same_call() -> None:
    handler = Scripted(NotFound("No such crop."))
    r = runner(tool("get_price", handler))
    ctx = CallContext(run_id="r")
    r.call_sync("get_price", '{"q": "cumin"}', context=ctx)
    env = r.call_sync("get_price", {"q": "cumin"}, context=ctx)
    assert env.error is not None and env.error.code == "REPEATED_FAILING_CALL"
    assert len(handler.calls) == 1


def _deep(n: int) -> Any:
    value: Any = "x"
    for _ in range(n):
        value = {"q": value}
    return value


DEEP = _deep(2000)


@pytest.mark.parametrize(
    "bad",
    [DEEP, {"q": "ü" * 300_000}, {"q": ["x"] * 200_000}, "{not json", b'{"q": 1}', 12, [1, 2],
     {"q": float("nan")}, {"q": "x", "extra": "ünïcode"}],
)
def test_hostile_arguments_get_an_envelope_and_the_guard_still_works(bad: Any) -> None:
    handler = Scripted()
    r = runner(tool("get_price", handler))
    ctx = CallContext(conversation_id="hostile")
    first = r.call_sync("get_price", bad, context=ctx)
    second = r.call_sync("get_price", bad, context=ctx)
    assert first.error is not None and first.error.error_class == "invalid_argument"
    assert second.error is not None and second.error.error_class == "invalid_argument"
    if bad is not DEEP:  # too deep to serialise: it cannot be compared, so it is refused by validation again
        assert second.error.code == "REPEATED_FAILING_CALL"
    assert handler.calls == []
    r.close()
    assert len(r.store.list_audit()) == 2
    assert len(first.to_json()) < 20_000 and len(second.to_json()) < 20_000


def test_a_reread_clears_a_conflict() -> None:
    write = Scripted(Conflict("Only 10 kg in stock."), {"order_id": 1})
    r = runner(tool("place_order", write, effect="write", idempotent=True), tool("check_stock", Scripted()))
    ctx = CallContext(conversation_id="c")
    assert r.call_sync("place_order", {"q": "40"}, context=ctx).error.code == "CONFLICT"  # type: ignore[union-attr]
    assert r.call_sync("place_order", {"q": "40"}, context=ctx).error.code == "REPEATED_FAILING_CALL"  # type: ignore[union-attr]
    assert r.call_sync("check_stock", {}, context=ctx).ok
    assert r.call_sync("place_order", {"q": "40"}, context=ctx).ok


def test_n_failures_of_one_tool_escalate() -> None:
    handler = Scripted(NotFound("No such order."))
    r = runner(tool("get_order", handler), loop_guard=LoopGuard(max_tool_failures=3))
    ctx = CallContext(run_id="r")
    envs = [r.call_sync("get_order", {"q": str(i)}, context=ctx) for i in range(4)]
    assert [e.error.next_action for e in envs[:2]] == ["repair", "repair"]  # type: ignore[union-attr]
    assert envs[2].error.next_action == "escalate"  # type: ignore[union-attr]
    assert envs[2].meta.extra["stop_reason"] == "failure_limit"
    assert envs[3].error.code == "TOO_MANY_FAILURES"  # type: ignore[union-attr]
    assert len(handler.calls) == 3


def test_guard_off() -> None:
    handler = Scripted(NotFound("no"))
    r = runner(tool("get_price", handler), loop_guard=None)
    for _ in range(3):
        r.call_sync("get_price", {}, context=CallContext(run_id="r"))
    assert len(handler.calls) == 3


# --- timeouts (real time) -----------------------------------------------------------------------------------


def sleepy(seconds: float) -> Any:
    def handler(args: dict[str, Any], ctx: CallContext) -> Any:
        time.sleep(seconds)
        return {"late": True}

    return handler


def test_sync_handler_timeout_on_the_sync_path() -> None:
    r = Runner(Toolset([tool("get_price", sleepy(2.0), timeout_s=0.1)]), retry=None)
    start = time.monotonic()
    env = r.call_sync("get_price", {})
    assert time.monotonic() - start < 1.0
    assert env.error is not None and env.error.code == "TIMEOUT" and env.error.error_class == "transient_upstream"


async def test_sync_handler_timeout_on_the_async_path() -> None:
    r = Runner(Toolset([tool("get_price", sleepy(2.0), timeout_s=0.1)]), retry=None)
    start = time.monotonic()
    env = await r.call("get_price", {})
    assert time.monotonic() - start < 1.0
    assert env.error is not None and env.error.code == "TIMEOUT"


@pytest.mark.parametrize("path", ["sync", "async"])
def test_async_handler_timeout(path: str) -> None:
    async def slow(args: dict[str, Any], ctx: CallContext) -> Any:
        await asyncio.sleep(2)

    r = Runner(Toolset([tool("get_price", slow, timeout_s=0.1)]), retry=None)
    start = time.monotonic()
    env = r.call_sync("get_price", {}) if path == "sync" else asyncio.run(r.call("get_price", {}))
    assert time.monotonic() - start < 1.0
    assert env.error is not None and env.error.code == "TIMEOUT"


def test_a_timed_out_write_is_outcome_unknown() -> None:
    r = Runner(Toolset([tool("send_payment", sleepy(1.0), effect="write", idempotent=False, timeout_s=0.05)]))
    env = r.call_sync("send_payment", {})
    assert env.error is not None and env.error.error_class == "outcome_unknown"
    assert env.error.code == "TIMEOUT_AFTER_DISPATCH"


def test_a_fast_handler_under_a_timeout_returns_its_value() -> None:
    r = Runner(Toolset([tool("get_price", sleepy(0.0), timeout_s=5)]))
    assert r.call_sync("get_price", {}).result == {"late": True}


async def test_async_path_retries_with_the_async_sleep() -> None:
    fake = FakeClock()
    r = runner(tool("get_price", Scripted(down(), {"p": 1})), fake=fake)
    env = await r.call("get_price", {})
    assert env.ok and env.meta.attempts == 2 and fake.sleeps == [1.0]


# --- properties ---------------------------------------------------------------------------------------------

FAILURES = st.sampled_from(
    [
        lambda: TimeoutError(),
        lambda: ConnectionError(),
        lambda: TransientUpstream("503", code="HTTP_503"),
        lambda: RateLimited("429", retry_after_s=0.5),
        lambda: RateLimited("429", retry_after_s=45.0),
        lambda: InternalError("boom"),
        lambda: NotFound("gone"),
        lambda: KeyError("bug"),
        lambda: None,  # success
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(FAILURES, min_size=1, max_size=6),
    attempts=st.integers(1, 6),
    risk=st.sampled_from(["low", "high"]),
    calls=st.integers(1, 3),
    path=st.sampled_from(["sync", "async"]),
)
def test_property_a_non_idempotent_write_is_dispatched_at_most_once(
    script: list[Any], attempts: int, risk: Any, calls: int, path: str
) -> None:
    steps = [make() for make in script]
    handler = Scripted(*[s if s is not None else {"ok": 1} for s in steps])
    r = runner(tool("send_payment", handler, effect="write", idempotent=False, risk=risk),
               retry=RetryPolicy(max_attempts=attempts), breakers=BreakerConfig(failure_threshold=1))
    for i in range(calls):
        before = len(handler.calls)
        args = {"q": str(i)}
        env = r.call_sync("send_payment", args) if path == "sync" else asyncio.run(r.call("send_payment", args))
        assert len(handler.calls) - before <= 1
        if not env.ok:
            assert (env.error is not None and env.error.error_class != "transient_upstream") or (
                env.error.code == "CIRCUIT_OPEN"
            )


@settings(max_examples=150, deadline=None)
@given(
    script=st.lists(FAILURES, min_size=1, max_size=8),
    wall=st.floats(0.1, 30),
    takes=st.floats(0, 0.05),
    attempts=st.integers(1, 8),
    rand=st.floats(0, 1, exclude_max=True),
)
def test_property_no_call_exceeds_its_wall_budget(
    script: list[Any], wall: float, takes: float, attempts: int, rand: float
) -> None:
    """Waits included, a call ends within its wall budget plus one attempt (here at most 50 ms)."""
    fake = FakeClock()
    handler = Scripted(*[s() if s() is not None else {"ok": 1} for s in script], clock=fake, takes_s=takes)
    r = runner(tool("get_price", handler), fake=fake, rng=lambda: rand,
               retry=RetryPolicy(max_attempts=attempts, max_wall_s=wall))
    start = fake.t
    r.call_sync("get_price", {})
    assert fake.t - start <= wall + 0.05 + 1e-9


def test_real_time_wall_budget_with_hanging_handlers() -> None:
    """Real clock: a hanging handler under `timeout_s` and a 0.3 s call budget ends within 50 ms of it."""
    r = Runner(Toolset([tool("get_price", sleepy(5.0), timeout_s=0.2)]),
               retry=RetryPolicy(max_attempts=5, base_delay_s=0.01, max_wall_s=0.3))
    for _ in range(3):
        start = time.monotonic()
        env = r.call_sync("get_price", {})
        assert time.monotonic() - start <= 0.3 + 0.05
        assert env.error is not None and env.error.next_action == "escalate"


async def test_real_time_wall_budget_async() -> None:
    async def hang(args: dict[str, Any], ctx: CallContext) -> Awaitable[Any]:
        await asyncio.sleep(5)
        raise AssertionError("unreachable")

    r = Runner(Toolset([tool("get_price", hang, timeout_s=0.15)]),
               retry=RetryPolicy(max_attempts=5, base_delay_s=0.01, max_wall_s=0.25))
    start = time.monotonic()
    await r.call("get_price", {})
    assert time.monotonic() - start <= 0.25 + 0.05


def test_runner_defaults_are_sensible() -> None:
    r = Runner(Toolset([tool("get_price", Scripted())]))
    assert r.retry.max_attempts == 3 and r.retry.base_delay_s == 1.0 and r.retry.jitter == "half"
    assert r.retry_bucket is not None and r.retry_bucket.available == 500
    assert r.loop_guard is not None
    assert isinstance(r.store, MemoryStore)
    assert r.breaker("get_price") is not None
    r.close()


def test_public_names() -> None:
    assert toolproof.Runner is Runner
