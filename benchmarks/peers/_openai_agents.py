"""openai-agents: a real `Runner.run` of an `Agent` whose model is the SDK's own `agents.testing.ScriptedModel`.

Each scripted step is a responder that reads the `function_call_output` item the runner appended (the text
the model would be sent), applies the policy and returns either `function_call("place_order", args)` or an
assistant message. The tool is `function_tool(place_order)` (strict mode, the default), with `timeout=` in
scenario 5. Tracing is disabled, so nothing leaves the machine. 0.24 refuses `timeout=` on a
plain `def`; scenario 5 then wraps the same function in an `async def` that awaits it in a thread.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.peers._common import (
    TIMEOUT_S,
    Observation,
    OrderBook,
    Reply,
    Scenario,
    Turns,
    make_place_order,
)

NAME = "openai-agents"
DIST = "openai-agents"


def available() -> bool:
    try:
        import agents  # noqa: F401
    except ImportError:
        return False
    return True


def steps(scenario: Scenario, obs: Observation, to_reply: Callable[[str], Reply]) -> Any:
    """The `ScriptedModel`: each step reads the new `function_call_output`s, applies the policy, and sends the
    scenario's call(s) or an assistant message."""
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    turns = Turns(scenario, obs)
    read = [0]

    def step(call: Any) -> Any:
        items = call.input if isinstance(call.input, list) else []
        outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        fresh, read[0] = outputs[read[0]:], len(outputs)
        if not fresh and turns.turns:
            return [assistant_message("Done.")]
        calls = turns.next([to_reply(str(o.get("output", ""))) for o in fresh])
        if not calls:
            return [assistant_message("Done.")]
        return [function_call("place_order", args, call_id=f"call-{obs.calls_sent}-{i}")
                for i, args in enumerate(calls)]

    return ScriptedModel([ModelStep.respond(step) for _ in range(4)])


async def drive(tools: list[Any], model: Any, obs: Observation, context: Any = None) -> Observation:
    """One `Runner.run` with tracing disabled; an exception that escapes it is an observation."""
    from agents import Agent, RunConfig, Runner

    agent = Agent(name="shop", instructions="Place orders.", model=model, tools=tools)
    try:
        await Runner.run(agent, "Book 400 kg of onion for 3 December.", context=context,
                         run_config=RunConfig(tracing_disabled=True))
    except Exception as exc:
        obs.escaped = f"{type(exc).__name__}: {exc}"
    return obs


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    from agents import function_tool

    obs = Observation(NAME, scenario.key)
    fn = make_place_order(book)
    try:
        tool = function_tool(fn, timeout=TIMEOUT_S if scenario.timeout else None)
    except ValueError as exc:  # 0.24: "timeout_seconds is only supported for async @function_tool handlers"
        obs.extra["refused"] = str(exc)
        obs.notes.append("plain def refuses timeout= (ValueError); measured via an async def wrapper (to_thread)")
        tool = function_tool(_async_twin(fn), timeout=TIMEOUT_S)
    obs.schema_closed = tool.params_json_schema.get("additionalProperties") is False
    model = steps(scenario, obs, lambda text: Reply.from_text("function_call_output", text))
    return await drive([tool], model, obs)


def _async_twin(fn: Any) -> Any:
    """What a user does when a plain def may not have a timeout: the same function, awaited in a thread."""

    @functools.wraps(fn)
    async def twin(*args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    return twin


def overhead_invokers(fn: Any, args: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """What the runner does per function call: `agents.tool.invoke_function_tool` with a `ToolContext` and the
    JSON arguments (it parses them, validates with the tool's pydantic model, runs a plain `def` in a thread)."""
    import json

    from agents import function_tool
    from agents.tool import invoke_function_tool
    from agents.tool_context import ToolContext

    tool = function_tool(fn)
    raw = json.dumps(args)

    async def call() -> Any:
        ctx = ToolContext(context=None, tool_name=tool.name, tool_call_id="call-1", tool_arguments=raw)
        return await invoke_function_tool(function_tool=tool, context=ctx, arguments=raw)

    return {"openai-agents invoke_function_tool": ("async", call)}
