"""The sync driver runs a read's plan unrolled (`drive_read_sync`); it must answer exactly as the general loop.

The general loop is forced by a runner whose stages include one more stage that only hands calls on: its plan
is then not `READ_PLAN`, so `drive_sync` takes the loop. Both runners see the same calls on a real in-memory
store with a fake clock, and the envelopes (call ids aside), audit trails and stop records must agree.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import pytest

from toolproof import CallContext, Runner, Toolset, TransientUpstream, tool
from toolproof.contract.envelope import Envelope
from toolproof.orchestration.breaker import BreakerConfig
from toolproof.pipeline.effects import Clock
from toolproof.pipeline.stages import READ_PLAN, READ_PLAN_UNGUARDED, STAGES, Stage, Step
from toolproof.pipeline.state import CallState


def _passes(rt: Runner, s: CallState) -> Step:
    """A stage that hands every call on: it only changes the plan."""
    return None


class LoopRunner(Runner):
    stages: ClassVar[tuple[Stage, ...]] = (*STAGES, _passes)


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


def _answers(runner_type: type[Runner]) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], list[str]]:
    clock = FakeClock()
    runner = runner_type(_toolset(), clock=Clock(clock.monotonic, clock.sleep, clock.async_sleep), rng=lambda: 0.5,
                         breakers=BreakerConfig(failure_threshold=2, recovery_s=30.0))
    with runner:
        envelopes = [_shape(runner.call_sync(name, args, context=ctx)) for name, args, ctx in CALLS]
        runner.flush()
        audit = [(r.tool, r.arguments, r.validation, r.attempt, r.outcome, r.error_class, r.code, r.exception_type)
                 for r in runner.store.list_audit(limit=100)]
        stops = sorted(dataclasses.asdict(s)["reason"] for s in runner.store.list_stops(limit=100))
    return envelopes, sorted(audit, key=repr), stops


def test_the_unrolled_read_path_answers_as_the_general_loop() -> None:
    plain = Runner(_toolset())
    get_price, get_stock = plain.toolset.get("get_price"), plain.toolset.get("get_stock")
    assert plain.plan(get_price) is READ_PLAN
    assert Runner(_toolset(), loop_guard=None).plan(get_price) is READ_PLAN_UNGUARDED
    assert plain.plan(get_stock) == READ_PLAN and plain.plan(get_stock) is not READ_PLAN  # timeout_s: a thread
    assert LoopRunner(_toolset()).plan(get_price) not in (READ_PLAN, READ_PLAN_UNGUARDED)

    unrolled, general = _answers(Runner), _answers(LoopRunner)
    assert unrolled == general
    envelopes, audit, stops = unrolled
    assert [e["ok"] for e in envelopes] == [True, True, False, True, False, False, False, False, False, True]
    assert envelopes[3]["meta"]["attempts"] == 2
    assert {e["error"]["code"] for e in envelopes if not e["ok"]} >= {"CIRCUIT_OPEN"}
    assert any(outcome == "invalid" for _, _, _, _, outcome, *_ in audit)
    assert any(exc == "RuntimeError" for *_, exc in audit)
    assert stops  # the give-ups left their records


def test_an_interrupt_in_a_read_handler_propagates_from_the_unrolled_path() -> None:
    @tool(effect="read")
    def get_weather(city: str) -> str:
        """Get the weather of one city."""
        raise KeyboardInterrupt

    runner = Runner(Toolset([get_weather]))
    assert runner.plan(get_weather) is READ_PLAN
    with pytest.raises(KeyboardInterrupt):
        runner.call_sync("get_weather", {"city": "Rajkot"})
