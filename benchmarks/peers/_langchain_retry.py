"""LangChain's `ToolRetryMiddleware` on `langchain.agents.create_agent`: its defaults (2 retries of any
exception, `on_failure="continue"`), except `initial_delay=0.01` so that a run takes milliseconds, not
seconds (the delays change when a retry happens, not whether).

The tool is the plain function (`StructuredTool.from_function`), or with toolproof the adapter's tools over
a Runner; the chat model is the scripted one of the LangGraph columns. No tool timeout exists here either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.peers._common import Observation, OrderBook, Scenario
from benchmarks.peers._langgraph import reply, tool_of
from benchmarks.peers._langgraph_toolproof import _model

NAME = "langchain ToolRetryMiddleware"
DIST = "langchain"


def available() -> bool:
    try:
        from langchain.agents.middleware import ToolRetryMiddleware  # noqa: F401
    except ImportError:
        return False
    return True


async def drive(scenario: Scenario, obs: Observation, tools: list[Any], read: Any) -> Observation:
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolRetryMiddleware

    agent = create_agent(_model(scenario, obs, read), tools, middleware=[ToolRetryMiddleware(initial_delay=0.01)])
    try:
        await agent.ainvoke({"messages": [("user", "Book 400 kg of onion for 3 December.")]},
                            {"configurable": {"thread_id": f"conv-{scenario.key}"}})
    except Exception as exc:
        obs.escaped = f"{type(exc).__name__}: {exc}"
    return obs


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    obs = Observation(NAME, scenario.key)
    if scenario.timeout:
        obs.notes.append("no tool timeout: the slow body was waited for")
    return await drive(scenario, obs, [tool_of(book)], reply)
