"""pydantic-ai's own agent loop over `ToolproofToolset`. The model is a `FunctionModel` scripted to follow
conftest's SCRIPT, because no model provider is reachable from CI."""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

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
from toolproof.integrations.pydantic_ai import ToolproofToolset


class Scripted:
    """Sends the script's calls one per turn (as raw JSON text), and keeps every tool result it read."""

    def __init__(self, script: tuple[dict[str, Any], ...]) -> None:
        self.script = list(script)
        self.returns: list[ToolReturnPart] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest):
            self.returns += [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if not self.script:
            return ModelResponse(parts=[TextPart("Done.")])
        args = json.dumps(self.script.pop(0))
        return ModelResponse(parts=[ToolCallPart("place_order", args, tool_call_id=f"call-{len(self.returns)}")])

    def read(self) -> list[dict[str, Any]]:
        """The envelopes as the model was sent them (the provider-facing text)."""
        return [envelope_in(p.model_response_str()) for p in self.returns]


async def test_the_script_through_the_agent_loop(desk: toolproof.Runner, faulty_shop: FaultyShop) -> None:
    model = Scripted(SCRIPT)
    agent = Agent(FunctionModel(model), toolsets=[ToolproofToolset(desk, principal=BUYER)])
    # Default retries (1): four failures in a row still do not end the run, because failures are `ToolFailed`.
    result = await agent.run("Book 400 kg of onion for Friday.", conversation_id="chat-1")
    assert result.output == "Done."
    assert [p.outcome for p in model.returns] == ["failed"] * 4  # pydantic-ai's own failure mark
    check_first_conversation(model.read(), faulty_shop)

    other = Scripted((ORDER,))
    await Agent(FunctionModel(other), toolsets=[ToolproofToolset(desk, principal=BUYER)]).run(
        "Book 400 kg of onion for Friday.", conversation_id="chat-2")
    assert [p.outcome for p in other.returns] == ["success"]
    check_second_conversation(other.read(), faulty_shop)


async def test_the_conversation_continues_through_message_history(desk: toolproof.Runner,
                                                                  faulty_shop: FaultyShop) -> None:
    """A second run on the first run's history is the same conversation: the resend is not placed."""
    agent = Agent(FunctionModel(Scripted((ORDER,))), toolsets=[ToolproofToolset(desk, principal=lambda ctx: ctx.deps)],
                  deps_type=str)
    first = await agent.run("Book it.", deps=BUYER)
    again = Scripted((ORDER,))
    with agent.override(model=FunctionModel(again)):
        await agent.run("Book it again.", deps=BUYER, message_history=first.all_messages())
    (resend,) = again.read()
    assert resend["error"]["class"] == "outcome_unknown"
    assert faulty_shop.inserts == 1 and faulty_shop.count_orders() == 1


async def test_malformed_json_and_a_non_object_get_the_envelope(desk: toolproof.Runner) -> None:
    replies: list[ToolReturnPart] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest):
            replies.extend(p for p in last.parts if isinstance(p, ToolReturnPart))
        if len(replies) >= 2:
            return ModelResponse(parts=[TextPart("Done.")])
        return ModelResponse(parts=[ToolCallPart("get_today_price", ['{"crop": ', "[1]"][len(replies)],
                                                 tool_call_id=f"c{len(replies)}")])

    await Agent(FunctionModel(model), toolsets=[ToolproofToolset(desk)]).run("Price?")
    codes = [envelope_in(p.model_response_str())["error"]["code"] for p in replies]
    assert codes == ["INVALID_JSON", "ARGUMENTS_NOT_OBJECT"]
    assert [p.outcome for p in replies] == ["failed", "failed"]
