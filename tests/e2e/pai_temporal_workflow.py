"""The workflow of the pydantic-ai durable-agent test: it runs the agent of `pai_temporal_app`, imported
through the sandbox untouched (the agent is built once, outside any workflow, as pydantic-ai requires)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tests.e2e import pai_temporal_app


@workflow.defn(name="DeskAgentWorkflow")
class DeskAgentWorkflow:
    """pydantic-ai's durable agent (`TemporalDurability`) with toolproof's tools; its messages, as JSON."""

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await pai_temporal_app.agent.run(prompt)
        return result.all_messages_json().decode()
