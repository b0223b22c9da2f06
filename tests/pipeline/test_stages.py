"""The pipeline as named stages: the order every call runs, and a stage added the way a user would add one.

A rate limiter and an approval gate are added by subclassing `Runner` with one new function each and one
tuple; both use typed effects (`Sleep`, `Io`) and run unchanged on the sync and the async driver.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from toolproof import CallContext, Runner, Tool, Toolset
from toolproof.contract._envelope import Envelope, Meta
from toolproof.contract._errors import PermissionDenied
from toolproof.pipeline import _stages as stages
from toolproof.pipeline._effects import Clock, Io, Sleep, Steps
from toolproof.pipeline._stages import STAGES, Stage
from toolproof.pipeline._state import CallState

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}


def test_every_call_runs_the_stages_in_the_documented_order() -> None:
    names = [stage.__name__ for stage in STAGES]
    assert names == ["guard", "validate", "approval", "claim", "dispatch", "settle"]
    assert Runner.stages == STAGES


def test_a_tool_runs_only_the_stages_that_can_act_on_it() -> None:
    read = Tool.from_schema("look_up", "Look something up.", SCHEMA, lambda a, c: a, effect="read")
    write = Tool.from_schema("wire_money", "Wire money.", SCHEMA, lambda a, c: a, effect="write", idempotent=True,
                             approval="always")
    runner = Runner(Toolset([read, write]))
    assert [st.__name__ for st in runner.plan(read)] == ["guard", "validate", "dispatch"]
    assert runner.plan(write) == STAGES
    assert [st.__name__ for st in Runner(Toolset([read]), loop_guard=None).plan(read)] == ["validate", "dispatch"]


class Recorder:
    """What the handler and the fake clock saw."""

    def __init__(self) -> None:
        self.handled: list[str] = []
        self.slept: list[float] = []

    def handler(self, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        self.handled.append(args["q"])
        return args

    def clock(self) -> Clock:
        async def async_sleep(seconds: float) -> None:
            self.slept.append(seconds)

        return Clock(lambda: 100.0, self.slept.append, async_sleep)


# --- the two stages a user adds: one function each --------------------------------------------------------

APPROVALS: dict[str, str] = {"call-approved": "ops@example.com"}


def approval_gate(rt: Runner, s: CallState) -> Steps:
    """A high-risk write runs only once a person approved this call (looked up with an `Io` effect)."""
    if s.tool.risk != "high":
        return None
    call_id = s.context.call_id or ""
    approver = yield Io(lambda: APPROVALS.get(call_id))
    if approver is not None:
        return None
    refusal = PermissionDenied("This action waits for a person's approval; it was not sent.", code="NOT_APPROVED")
    return Envelope.failure(refusal, Meta(s.tool.name, call_id, s.tool.schema_version, 0))


def rate_limit(rt: Runner, s: CallState) -> Steps:
    """Every call waits 0.25 s first (a `Sleep` effect the driver performs on the runner's clock)."""
    yield Sleep(0.25)
    return None


class GatedRunner(Runner):
    stages: ClassVar[tuple[Stage, ...]] = (
        stages.guard, stages.validate, rate_limit, approval_gate, stages.claim, stages.dispatch, stages.settle,
    )


def gated(recorder: Recorder) -> GatedRunner:
    risky = Tool.from_schema("wire_money", "Wire money.", SCHEMA, recorder.handler, effect="write", risk="high",
                             idempotent=True)
    plain = Tool.from_schema("look_up", "Look something up.", SCHEMA, recorder.handler, effect="read")
    return GatedRunner(Toolset([risky, plain]), clock=recorder.clock())


def call(runner: Runner, path: str, name: str, arguments: Any, context: CallContext) -> Envelope:
    if path == "sync":
        return runner.call_sync(name, arguments, context=context)
    return asyncio.run(runner.call(name, arguments, context=context))


@pytest.mark.parametrize("path", ["sync", "async"])
def test_an_added_stage_refuses_before_dispatch(path: str) -> None:
    recorder = Recorder()
    runner = gated(recorder)
    env = call(runner, path, "wire_money", {"q": "x"}, CallContext(call_id="call-unapproved"))
    assert not env.ok and env.error is not None and env.error.code == "NOT_APPROVED"
    assert recorder.handled == []  # refused before the journal and the handler
    assert runner.store.journal_list() == []
    assert recorder.slept == [0.25]  # the rate limiter ran first


@pytest.mark.parametrize("path", ["sync", "async"])
def test_added_stages_let_other_calls_through_unchanged(path: str) -> None:
    recorder = Recorder()
    runner = gated(recorder)
    approved = call(runner, path, "wire_money", {"q": "a"}, CallContext(call_id="call-approved"))
    read = call(runner, path, "look_up", {"q": "b"}, CallContext(call_id="call-read"))
    assert approved.ok and approved.result == {"q": "a"} and approved.meta.idempotency_key is not None
    assert read.ok and read.result == {"q": "b"}
    assert recorder.handled == ["a", "b"]
    assert recorder.slept == [0.25, 0.25]
    assert [i.status for i in runner.store.journal_list()] == ["done"]  # claim and settle still ran


def test_a_stage_that_returns_nothing_hands_on_and_the_last_stage_must_answer() -> None:
    class Broken(Runner):
        stages: ClassVar[tuple[Stage, ...]] = (stages.guard, stages.validate)

    tool = Tool.from_schema("look_up", "Look something up.", SCHEMA, lambda args, ctx: args, effect="read")
    with pytest.raises(RuntimeError, match="no stage returned an envelope"):
        Broken(Toolset([tool])).call_sync("look_up", {"q": "x"})
