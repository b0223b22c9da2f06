"""The OpenAI Agents SDK's own runner over `function_tools`. The model is the SDK's `ScriptedModel`, scripted to
follow conftest's SCRIPT, because no model provider is reachable from CI."""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, RunConfig, Runner, SQLiteSession
from agents.items import ToolCallOutputItem
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.tracing import Span, TracingProcessor, add_trace_processor

import toolproof
from tests.integrations.conftest import (
    BUYER,
    ORDER,
    SCRIPT,
    FaultyShop,
    check_first_conversation,
    check_second_conversation,
    envelope_in,
)
from toolproof.integrations.openai_agents import function_tools


def scripted(script: tuple[dict[str, Any], ...], read: list[dict[str, Any]]) -> ScriptedModel:
    """One step per call of the script, then a final answer; each step first reads the last function output."""
    calls = list(script)

    def step(call: ModelCall) -> Any:
        outputs = [i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if outputs:
            read.append(envelope_in(output_text(outputs[-1]["output"])))
        if not calls:
            return [assistant_message("Done.")]
        return [function_call("place_order", json.dumps(calls.pop(0)), call_id=f"call-{len(read)}")]

    return ScriptedModel([ModelStep.respond(step) for _ in range(len(script) + 1)])


def output_text(output: Any) -> str:
    """A function output's text: a string, or (from MCP tools) a list of content items."""
    if isinstance(output, str):
        return output
    (text,) = [item["text"] for item in output if item.get("type") == "input_text"]
    return text  # type: ignore[no-any-return]


class SpanErrors(TracingProcessor):
    """Collects the errors set on finished spans (the SDK's own record of a failed tool)."""

    def __init__(self) -> None:
        self.errors: list[dict[str, Any]] = []

    def on_span_end(self, span: Span[Any]) -> None:
        if span.error is not None:
            self.errors.append(dict(span.error))

    def on_trace_start(self, trace: Any) -> None: ...
    def on_trace_end(self, trace: Any) -> None: ...
    def on_span_start(self, span: Span[Any]) -> None: ...
    def shutdown(self) -> None: ...
    def force_flush(self) -> None: ...


async def test_the_script_through_the_agent_loop(desk: toolproof.Runner, faulty_shop: FaultyShop) -> None:
    read: list[dict[str, Any]] = []
    spans = SpanErrors()
    add_trace_processor(spans)
    agent = Agent(name="desk", model=scripted(SCRIPT, read), tools=function_tools(desk))
    context = toolproof.CallContext(conversation_id="chat-1", principal=BUYER)
    result = await Runner.run(agent, "Book 400 kg of onion for Friday.", context=context)
    assert result.final_output == "Done."
    check_first_conversation(read, faulty_shop)
    outputs = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    assert [o.custom_data["toolproof"]["ok"] for o in outputs if o.custom_data] == [False] * 4
    tool_errors = [e for e in spans.errors if e.get("message") == "Error running tool"]
    assert [e["data"]["error"] for e in tool_errors][:2] == ["invalid_argument: WRONG_TYPE",
                                                              "invalid_argument: OUT_OF_RANGE"]

    other: list[dict[str, Any]] = []
    agent = Agent(name="desk", model=scripted((ORDER,), other), tools=function_tools(desk))
    await Runner.run(agent, "Book it.", context={"conversation_id": "chat-2", "principal": BUYER})
    check_second_conversation(other, faulty_shop)


async def test_a_session_or_the_group_id_names_the_conversation(desk: toolproof.Runner,
                                                                faulty_shop: FaultyShop) -> None:
    tools = function_tools(desk, principal=BUYER)
    session = SQLiteSession("chat-7")
    first: list[dict[str, Any]] = []
    await Runner.run(Agent(name="desk", model=scripted((ORDER,), first), tools=tools), "Book it.",
                     session=session, context=session)
    again: list[dict[str, Any]] = []
    await Runner.run(Agent(name="desk", model=scripted((ORDER,), again), tools=tools), "Again.",
                     run_config=RunConfig(group_id="chat-7"))
    assert first[0]["error"]["class"] == again[0]["error"]["class"] == "outcome_unknown"
    assert faulty_shop.inserts == 1 and faulty_shop.count_orders() == 1
