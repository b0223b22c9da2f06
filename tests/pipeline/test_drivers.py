"""The two drivers perform the same pipeline: `call_sync` and `await call` must answer exactly alike.

Both see the same calls on a real in-memory store with a fake clock, also through a runner whose stages include
one more stage that only hands calls on (a subclass's stage changes nothing but the plan), and the envelopes
(call ids aside), audit trails and stop records must agree.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from toolproof import CallContext, Runner, Toolset, TransientUpstream, tool
from toolproof.contract._envelope import Envelope
from toolproof.orchestration.breaker import BreakerConfig
from toolproof.pipeline import STAGES, CallState, Env, Stage, Step
from toolproof.pipeline._effects import Clock


def _passes(env: Env, s: CallState) -> Step:
    """A stage that hands every call on: it only changes the plan."""
    return None


class LoopRunner(Runner):
    stages: tuple[Stage, ...] = (*STAGES, _passes)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    async def async_sleep(self, seconds: float) -> None:
        self.now += seconds


def _toolset() -> Toolset:
    failures = {"n": 0}

    @tool(effect="read")
    def get_price(crop: str, grade: str = "A") -> float:
        """Get today's price of one crop, in rupees per kg."""
        if crop == "boom":
            raise RuntimeError("the price feed broke")
        if crop == "flaky":
            failures["n"] += 1
            if failures["n"] % 2:
                raise TransientUpstream("the feed is busy", retry_after_s=0.5)
        if crop == "down":
            raise TransientUpstream("the feed is down")
        return 285.0

    @tool(effect="read", timeout_s=5.0)
    def get_stock(crop: str) -> int:
        """Get the stock of one crop, in kg."""
        return 40

    return Toolset([get_price, get_stock])


CALLS: list[tuple[str, Any, CallContext | None]] = [
    ("get_price", {"crop": "jeera"}, None),
    ("get_price", '{"crop": "jeera", "grade": null}', None),
    ("get_price", {"crop": 4}, None),  # invalid
    ("get_price", {"crop": "flaky"}, CallContext(run_id="r1")),  # fails, retried, succeeds
    ("get_price", {"crop": "boom"}, CallContext(run_id="r1")),  # a bug: escalated with a stop record
    ("get_price", {"crop": "boom"}, CallContext(run_id="r1")),  # the loop guard refuses the repeat
    ("get_price", {"crop": "down"}, CallContext(conversation_id="c1")),
    ("get_price", {"crop": "down"}, CallContext(conversation_id="c2")),  # opens the breaker (threshold 2)
    ("get_price", {"crop": "jeera"}, None),  # refused by the open breaker
    ("get_stock", {"crop": "jeera"}, None),
]


def _shape(envelope: Envelope) -> dict[str, Any]:
    out = envelope.to_dict()
    out["meta"] = {k: v for k, v in out["meta"].items() if k not in ("call_id", "stop_id")}
    return out


def _answers(runner_type: type[Runner], *, awaited: bool = False,
             ) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], list[str]]:
    clock = FakeClock()
    runner = runner_type(_toolset(), clock=Clock(clock.monotonic, clock.sleep, clock.async_sleep), rng=lambda: 0.5,
                         breakers=BreakerConfig(failure_threshold=2, recovery_s=30.0))

    async def all_awaited() -> list[Envelope]:
        return [await runner.call(name, args, context=ctx) for name, args, ctx in CALLS]

    with runner:
        answered = (asyncio.run(all_awaited()) if awaited
                    else [runner.call_sync(name, args, context=ctx) for name, args, ctx in CALLS])
        envelopes = [_shape(envelope) for envelope in answered]
        runner.flush()
        audit = [(r.tool, r.arguments, r.validation, r.attempt, r.outcome, r.error_class, r.code, r.exception_type)
                 for r in runner.store.list_audit(limit=100)]
        stops = sorted(dataclasses.asdict(s)["reason"] for s in runner.store.list_stops(limit=100))
    return envelopes, sorted(audit, key=repr), stops


def test_both_drivers_answer_alike_with_and_without_an_added_stage() -> None:
    plain = Runner(_toolset())
    get_price = plain.toolset.get("get_price")
    assert [st.__name__ for st in plain.plan(get_price)] == ["guard", "validate", "dispatch"]
    assert [st.__name__ for st in LoopRunner(_toolset()).plan(get_price)] == ["guard", "validate", "dispatch",
                                                                                "_passes"]

    sync = _answers(Runner)
    assert _answers(LoopRunner) == sync
    assert _answers(Runner, awaited=True) == sync
    assert _answers(LoopRunner, awaited=True) == sync
    envelopes, audit, stops = sync
    assert [e["ok"] for e in envelopes] == [True, True, False, True, False, False, False, False, False, True]
    assert envelopes[3]["meta"]["attempts"] == 2
    assert {e["error"]["code"] for e in envelopes if not e["ok"]} >= {"CIRCUIT_OPEN"}
    assert any(outcome == "invalid" for _, _, _, _, outcome, *_ in audit)
    assert any(exc == "RuntimeError" for *_, exc in audit)
    assert stops  # the give-ups left their records


def test_an_interrupt_in_a_read_handler_propagates_from_both_drivers() -> None:
    @tool(effect="read")
    def get_weather(city: str) -> str:
        """Get the weather of one city."""
        raise KeyboardInterrupt

    runner = Runner(Toolset([get_weather]))
    with pytest.raises(KeyboardInterrupt):
        runner.call_sync("get_weather", {"city": "Rajkot"})
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(runner.call("get_weather", {"city": "Rajkot"}))
