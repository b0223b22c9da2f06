"""pydantic-ai's durable agent on Temporal with toolproof's tools: the agent, its runner and its offline model.

No model provider is reachable from CI: the model is pydantic-ai's own `FunctionModel`, scripted to ship the
same order twice (two turns, as a model that lost track does) and then answer. Everything else is real: the
durability capability, its model activities, toolproof's activities on a Temporal dev server. Imported by
the workflow module through `workflow.unsafe.imports_passed_through()`, as pydantic-ai documents.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import toolproof
from toolproof.integrations.pydantic_ai_temporal import TemporalToolproofToolset

#: What the carrier shipped (the effect the test counts).
SHIPPED: list[str] = []


@toolproof.tool(effect="write")
def ship(order_id: str) -> dict[str, Any]:
    """Ship an order (the carrier has no request key: a second call ships twice).

    Args:
        order_id: The order shipped.
    """
    SHIPPED.append(order_id)
    return {"order_id": order_id, "shipment": len(SHIPPED)}


def _script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(isinstance(m, ModelResponse) for m in messages)
    if turn < 2:
        return ModelResponse(parts=[ToolCallPart("ship", {"order_id": "o-1"}, tool_call_id=f"call-{turn}")])
    return ModelResponse(parts=[TextPart("shipped")])


runner = toolproof.Runner(toolproof.Toolset([ship]))
agent = Agent(FunctionModel(_script), name="desk", toolsets=[TemporalToolproofToolset(runner, principal="buyer-7")],
              capabilities=[TemporalDurability()])
