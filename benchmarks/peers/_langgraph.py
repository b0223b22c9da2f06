"""LangGraph's defaults: the standard tool-calling `StateGraph` (agent -> `ToolNode` -> agent, routed by
`tools_condition`) over the plain function as a LangChain tool (`StructuredTool.from_function`).

The chat model is the scripted one of the "with toolproof" column. `ToolNode` has no tool timeout, so the
timeout scenario waits for the slow body (the cell says so); an exception it does not handle escapes the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.peers._common import Observation, OrderBook, Reply, Scenario, make_place_order
from benchmarks.peers._langgraph_toolproof import _graph, _model

NAME = "langgraph ToolNode"
DIST = "langgraph"


def available() -> bool:
    try:
        import langchain_core.tools  # noqa: F401
        import langgraph.prebuilt  # noqa: F401
    except ImportError:
        return False
    return True


def reply(message: Any) -> Reply:
    return Reply.from_text(f"ToolMessage status={message.status}", str(message.content),
                           error=message.status == "error")


def tool_of(book: OrderBook) -> Any:
    from langchain_core.tools import StructuredTool

    return StructuredTool.from_function(make_place_order(book))


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    obs = Observation(NAME, scenario.key)
    if scenario.timeout:
        obs.notes.append("ToolNode has no tool timeout: the slow body was waited for")
    graph = _graph(_model(scenario, obs, reply), [tool_of(book)])
    try:
        await graph.ainvoke({"messages": [("user", "Book 400 kg of onion for 3 December.")]},
                            {"configurable": {"thread_id": f"conv-{scenario.key}"}})
    except Exception as exc:
        obs.escaped = f"{type(exc).__name__}: {exc}"
    return obs
