"""Time limits that hold: the call's wall budget bounds an attempt with no `timeout_s`, a handler that ignores
cancellation is abandoned at its timeout, and a success that arrives after the timeout (a handler that
blocked the event loop) says so in its envelope. Real handlers, real time (short)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from toolproof import CallContext, Runner, Tool, Toolset
from toolproof.orchestration.policy import RetryPolicy

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}


def tool(name: str, handler: Any, **kwargs: Any) -> Tool:
    kwargs.setdefault("effect", "read")
    return Tool.from_schema(name, f"The {name} tool.", SCHEMA, handler, **kwargs)


def call(r: Runner, path: str, name: str) -> tuple[Any, float]:
    """The envelope and how long the call took (measured inside the loop: `asyncio.run` itself waits at
    shutdown for every task, an abandoned handler included; that wait is the caller's loop, not the call)."""

    async def timed() -> tuple[Any, float]:
        start = time.monotonic()
        env = await r.call(name, {})
        return env, time.monotonic() - start

    if path == "async":
        return asyncio.run(timed())
    start = time.monotonic()
    env = r.call_sync(name, {})
    return env, time.monotonic() - start


async def forever(args: dict[str, Any], ctx: CallContext) -> Any:
    await asyncio.sleep(30)


async def stubborn(args: dict[str, Any], ctx: CallContext) -> Any:
    """Swallows every cancellation and keeps going (for a while: the test process must end)."""
    end = time.monotonic() + 3
    while time.monotonic() < end:
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            pass
    return {"late": True}


async def blocks_the_loop(args: dict[str, Any], ctx: CallContext) -> Any:
    time.sleep(0.6)  # a sync call inside an async handler: the event loop cannot run the timeout
    return {"done": True}


@pytest.mark.parametrize("path", ["sync", "async"])
def test_the_wall_budget_bounds_an_async_handler_without_a_timeout(path: str) -> None:
    r = Runner(Toolset([tool("get_price", forever)]), retry=RetryPolicy(max_attempts=3, max_wall_s=0.3))
    env, took = call(r, path, "get_price")
    assert took < 2.0
    assert env.error is not None and env.error.code == "TIMEOUT"


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_handler_that_swallows_cancellation_is_abandoned_at_its_timeout(path: str) -> None:
    r = Runner(Toolset([tool("get_price", stubborn, timeout_s=0.2)]), retry=None)
    env, took = call(r, path, "get_price")
    assert took < 1.5
    assert env.error is not None and env.error.code == "TIMEOUT"


@pytest.mark.parametrize("effect", ["read", "write"])
def test_a_success_after_the_timeout_says_the_deadline_was_missed(effect: str) -> None:
    r = Runner(Toolset([tool("set_price", blocks_the_loop, effect=effect, timeout_s=0.1)]), retry=None)
    env = asyncio.run(r.call("set_price", {}, context=CallContext(conversation_id="c1")))
    assert env.ok and env.result == {"done": True}  # the work is done: a write is never re-sent as failed
    late = env.meta.extra["deadline_missed"]
    assert late["timeout_s"] == pytest.approx(0.1) and late["elapsed_s"] >= 0.5
    assert env.to_dict()["meta"]["deadline_missed"] == late


def test_a_success_in_time_carries_no_flag() -> None:
    async def quick(args: dict[str, Any], ctx: CallContext) -> Any:
        return {"done": True}

    env = asyncio.run(Runner(Toolset([tool("get_price", quick, timeout_s=1)]), retry=None).call("get_price", {}))
    assert env.ok and "deadline_missed" not in env.meta.extra
