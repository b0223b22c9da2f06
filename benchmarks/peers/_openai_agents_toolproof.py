"""openai-agents with toolproof: the same `Runner.run` and `ScriptedModel` as `_openai_agents`, the tool from
`toolproof.integrations.openai_agents.function_tools` over a Runner (a SQLite journal).

The conversation comes from the run's `context=` (a `CallContext`); the tool gets the raw JSON text and
returns the envelope as the `function_call_output`, which the script reads (`next_action`). Scenario 5's
timeout is toolproof's (`timeout_s=0.1` on the tool).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.peers import _openai_agents
from benchmarks.peers._common import Observation, OrderBook, Scenario
from benchmarks.peers._toolproof import envelope_reply, runner_for

NAME = "openai-agents with toolproof"
DIST = "openai-agents"
SUFFIX = " with toolproof"


def available() -> bool:
    try:
        import toolproof.integrations.openai_agents  # noqa: F401
    except ImportError:
        return False
    return True


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    from toolproof import CallContext
    from toolproof.integrations.openai_agents import function_tools

    obs = Observation(NAME, scenario.key)
    runner = runner_for(scenario, book, tmp, obs, name="openai-agents")
    tools = function_tools(runner)
    obs.schema_closed = tools[0].params_json_schema.get("additionalProperties") is False
    model = _openai_agents.steps(scenario, obs, lambda text: envelope_reply("function_call_output", text))
    try:
        return await _openai_agents.drive(tools, model, obs, CallContext(conversation_id=f"conv-{scenario.key}"))
    finally:
        runner.close()
