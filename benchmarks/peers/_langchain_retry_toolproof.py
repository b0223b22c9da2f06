"""LangChain's `ToolRetryMiddleware` (as in its own column) over toolproof's LangChain tools on a Runner: a
failure is an envelope in a `ToolMessage`, not an exception, so the middleware has nothing to retry."""

from __future__ import annotations

from pathlib import Path

from benchmarks.peers import _langchain_retry
from benchmarks.peers._common import Observation, OrderBook, Scenario
from benchmarks.peers._langgraph_toolproof import _reply
from benchmarks.peers._toolproof import runner_for

NAME = "langchain ToolRetryMiddleware with toolproof"
DIST = "langchain"
SUFFIX = " with toolproof"


def available() -> bool:
    try:
        import toolproof.integrations.langchain  # noqa: F401
    except ImportError:
        return False
    return _langchain_retry.available()


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    from toolproof.integrations.langchain import tools

    obs = Observation(NAME, scenario.key)
    runner = runner_for(scenario, book, tmp, obs, name="langchain-retry")
    try:
        return await _langchain_retry.drive(scenario, obs, tools(runner), _reply)
    finally:
        runner.close()
