"""pydantic-ai with toolproof: the same `Agent` run and `FunctionModel` script as `_pydantic_ai`, the tool
served by `toolproof.integrations.pydantic_ai.ToolproofToolset` over a Runner (a SQLite journal).

The conversation is pydantic-ai's own (`agent.run(..., conversation_id=...)`); the toolset hands it to the
runner. A failure arrives as a `ToolReturnPart` with `outcome="failed"` whose text is the envelope; the
script reads its `next_action`. Scenario 5's timeout is toolproof's (`timeout_s=0.1` on the tool).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.peers import _pydantic_ai
from benchmarks.peers._common import Observation, OrderBook, Reply, Scenario
from benchmarks.peers._toolproof import envelope_reply, runner_for

NAME = "pydantic-ai with toolproof"
DIST = "pydantic-ai-slim"
SUFFIX = " with toolproof"


def available() -> bool:
    try:
        import toolproof.integrations.pydantic_ai  # noqa: F401
    except ImportError:
        return False
    return True


def _reply(part: Any) -> Reply:
    return envelope_reply(f"ToolReturnPart outcome={part.outcome}", part.model_response_str())


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    from toolproof.integrations.pydantic_ai import ToolproofToolset

    obs = Observation(NAME, scenario.key)
    runner = runner_for(scenario, book, tmp, obs, name="pydantic-ai")
    agent = Agent(FunctionModel(_pydantic_ai.script(scenario, obs, _reply)), toolsets=[ToolproofToolset(runner)])
    try:
        return await _pydantic_ai.drive(agent, obs, conversation_id=f"conv-{scenario.key}")
    finally:
        runner.close()
