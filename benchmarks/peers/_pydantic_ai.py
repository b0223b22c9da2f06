"""pydantic-ai (pydantic-ai-slim): a real `Agent` run whose model is a `FunctionModel`.

The scripted model function returns a `ToolCallPart` with the scenario's arguments, reads the
`ToolReturnPart` the agent graph sends back (its `outcome`: `retried` means "the call has to be made again";
its text is `model_response_str()`, what providers are sent), and resends once if the policy says so.
The tool is registered as `Tool(place_order)`, with `timeout=` in scenario 5.
"""

from __future__ import annotations

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

NAME = "pydantic-ai"
DIST = "pydantic-ai-slim"


def available() -> bool:
    try:
        import pydantic_ai  # noqa: F401
    except ImportError:
        return False
    return True


def _reply(part: Any) -> Reply:
    from pydantic_ai.messages import ERROR_OUTCOMES

    text = part.model_response_str()
    return Reply.from_text(f"ToolReturnPart outcome={part.outcome}", text, error=part.outcome in ERROR_OUTCOMES,
                           told_retry=part.outcome == "retried")


def script(scenario: Scenario, obs: Observation, to_reply: Callable[[Any], Reply]) -> Callable[..., Any]:
    """The `FunctionModel` function: send the scenario's call, read the `ToolReturnPart`s, maybe resend once."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo

    turns = Turns(scenario, obs)

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if obs.schema_closed is None and info.function_tools:
            obs.schema_closed = info.function_tools[0].parameters_json_schema.get("additionalProperties") is False
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        if not returns and turns.turns:
            return ModelResponse(parts=[TextPart("Done.")])
        calls = turns.next([to_reply(p) for p in returns])
        if not calls:
            return ModelResponse(parts=[TextPart("Done.")])
        return ModelResponse(parts=[ToolCallPart("place_order", args, tool_call_id=f"call-{obs.calls_sent}-{i}")
                                    for i, args in enumerate(calls)])

    return model


async def drive(agent: Any, obs: Observation, **run_kwargs: Any) -> Observation:
    """One `agent.run`; an exception that escapes it is an observation, not a failure of the driver."""
    try:
        await agent.run("Book 400 kg of onion for 3 December.", **run_kwargs)
    except Exception as exc:
        obs.escaped = f"{type(exc).__name__}: {exc}"
    return obs


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.models.function import FunctionModel

    obs = Observation(NAME, scenario.key)
    tool = Tool(make_place_order(book), timeout=TIMEOUT_S if scenario.timeout else None)
    return await drive(Agent(FunctionModel(script(scenario, obs, _reply)), tools=[tool]), obs)


def overhead_invokers(fn: Any, args: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """What the agent graph does per tool call, minus the model: validate the JSON arguments with the tool's
    pydantic validator (`FunctionSchema.validator.validate_json`), then `FunctionSchema.call(args, ctx)`,
    which runs a plain `def` in a worker thread (`run_in_executor`)."""
    import json

    from pydantic_ai import Tool
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tools import RunContext
    from pydantic_ai.usage import RunUsage

    schema = Tool(fn).function_schema
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    raw = json.dumps(args)

    async def call() -> Any:
        return await schema.call(schema.validator.validate_json(raw), ctx)

    return {"pydantic-ai FunctionSchema validate+call": ("async", call)}
