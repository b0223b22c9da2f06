"""pydantic-ai's durable agents on Temporal (`TemporalDurability`) with toolproof's tools as activities
(`toolproof[pydantic-ai,temporal]`).

    agent = Agent(model, name="desk", toolsets=[TemporalToolproofToolset(runner, id="toolproof")],
                  capabilities=[TemporalDurability()])
    Worker(client, task_queue="desk", workflows=[Desk], activities=activities(runner),
           plugins=[AgentPlugin(agent)])

pydantic-ai moves the model's requests and its own function toolsets into activities; a toolset it does not
know it leaves in the workflow, where a tool's I/O must not run. This toolset lists the runner's tools in the
workflow (static definitions, deterministic) and runs each call as toolproof's activity for the tool
(`toolproof.integrations.temporal`): the workflow is the conversation, a retried activity replays its write,
and a failure envelope reaches the model as `ToolFailed`, as with `ToolproofToolset`. Outside a workflow it is
`ToolproofToolset`. Import the module that builds the agent with `workflow.unsafe.imports_passed_through()`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.toolsets import ToolsetTool
from temporalio import workflow
from temporalio.common import RetryPolicy

from ..contract._envelope import Envelope
from ..pipeline._runner import Runner
from ._common import Principal, resolve_principal
from .pydantic_ai import _NOT_AN_OBJECT, ToolproofToolset, _answer
from .temporal import RETRY_POLICY, call_tool

__all__ = ["TemporalToolproofToolset"]


class TemporalToolproofToolset(ToolproofToolset):
    """`ToolproofToolset` whose calls, inside a Temporal workflow, run as toolproof's activities."""

    def __init__(self, runner: Runner, *, principal: Principal = None, id: str | None = "toolproof",
                 start_to_close_timeout: timedelta = timedelta(seconds=60),
                 retry_policy: RetryPolicy = RETRY_POLICY) -> None:
        super().__init__(runner, principal=principal, id=id)
        self.start_to_close_timeout = start_to_close_timeout
        self.retry_policy = retry_policy

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if not workflow.in_workflow():
            return await super().call_tool(name, tool_args, ctx, tool)
        # The same unwrapping as `ToolproofToolset.call_tool`: a non-object value travels as it came.
        arguments: Any = tool_args.get(_NOT_AN_OBJECT, tool_args) if len(tool_args) == 1 else tool_args
        data = await call_tool(name, arguments, principal=resolve_principal(self.principal, ctx),
                               start_to_close_timeout=self.start_to_close_timeout, retry_policy=self.retry_policy)
        return _answer(Envelope.from_dict(data))
