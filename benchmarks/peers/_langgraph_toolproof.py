"""LangGraph with toolproof: the standard tool-calling `StateGraph` (agent -> `ToolNode` -> agent, routed by
`tools_condition`) over `toolproof.integrations.langchain.tools`, a Runner with a SQLite journal.

The chat model is scripted (with `bind_tools`), because no provider is reachable: it sends the scenario's
call, reads the `ToolMessage` (`status="error"` on failure, the envelope as content) and follows the
policy. The conversation is LangGraph's `thread_id` in `config["configurable"]`. Scenario 5's timeout is
toolproof's (`timeout_s=0.1` on the tool).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.peers._common import Observation, OrderBook, Reply, Scenario, Turns
from benchmarks.peers._toolproof import envelope_reply, runner_for

NAME = "langgraph with toolproof"
DIST = "langgraph"
SUFFIX = " with toolproof"


def available() -> bool:
    try:
        import langgraph.prebuilt  # noqa: F401

        import toolproof.integrations.langchain  # noqa: F401
    except ImportError:
        return False
    return True


def _reply(message: Any) -> Reply:
    return envelope_reply(f"ToolMessage status={message.status}", str(message.content))


def _model(scenario: Scenario, obs: Observation, to_reply: Any = None) -> Any:
    """A chat model that follows the scenario's policy; built here so langchain is imported only when present."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    read = to_reply or _reply
    turns = Turns(scenario, obs)

    def answer(message: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=message)])

    class ScriptedChatModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            fresh: list[Any] = []
            for m in reversed(messages):
                if not isinstance(m, ToolMessage):
                    break
                fresh.insert(0, m)
            if not fresh and turns.turns:
                return answer(AIMessage("Done."))
            calls = turns.next([read(m) for m in fresh])
            if not calls:
                return answer(AIMessage("Done."))
            return answer(AIMessage("", tool_calls=[{"name": "place_order", "args": args,
                                                     "id": f"call-{obs.calls_sent}-{i}"}
                                                    for i, args in enumerate(calls)]))

    return ScriptedChatModel()


def _graph(model: Any, tools: list[Any]) -> Any:
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    bound = model.bind_tools(tools)

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    from toolproof.integrations.langchain import tools

    obs = Observation(NAME, scenario.key)
    runner = runner_for(scenario, book, tmp, obs, name="langgraph")
    graph = _graph(_model(scenario, obs), tools(runner))
    try:
        await graph.ainvoke({"messages": [("user", "Book 400 kg of onion for 3 December.")]},
                            {"configurable": {"thread_id": f"conv-{scenario.key}"}})
    except Exception as exc:
        obs.escaped = f"{type(exc).__name__}: {exc}"
    finally:
        runner.close()
    return obs
