"""LangGraph's own loop (a `StateGraph` with `ToolNode` and `tools_condition`, a checkpointer for threads) over
`toolproof.integrations.langchain.tools`. The chat model is scripted (`bind_tools` included) to follow
conftest's SCRIPT, because no model provider is reachable from CI."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

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
from toolproof.integrations.langchain import tools


class ScriptedChatModel(BaseChatModel):
    """Sends the script's calls one per turn and keeps every `ToolMessage` it was given."""

    script: list[dict[str, Any]]
    read: list[ToolMessage] = []
    bound: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        self.bound = [t.name for t in tools]
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            self.read.append(messages[-1])
        if not self.script:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("Done."))])
        call = {"name": "place_order", "args": self.script.pop(0), "id": f"call-{len(self.read)}"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def graph(model: ScriptedChatModel, desk_tools: list[BaseTool], saver: InMemorySaver) -> Any:
    """The standard tool-calling graph: agent -> tools -> agent until the model stops calling tools."""
    bound = model.bind_tools(desk_tools)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(desk_tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "user_id": BUYER}}


async def test_the_script_through_the_graph(desk: toolproof.Runner, faulty_shop: FaultyShop) -> None:
    saver = InMemorySaver()
    model = ScriptedChatModel(script=list(SCRIPT), read=[])
    app = graph(model, tools(desk), saver)
    out = await app.ainvoke({"messages": [("user", "Book 400 kg of onion for Friday.")]}, config("thread-1"))
    assert out["messages"][-1].content == "Done."
    assert model.bound == desk.toolset.names
    assert [m.status for m in model.read] == ["error"] * 4  # LangChain's own failure mark
    assert [m.artifact for m in model.read] == [json.loads(m.content) for m in model.read]  # artifact = content
    check_first_conversation([envelope_in(m.content) for m in model.read], faulty_shop)

    other = ScriptedChatModel(script=[ORDER], read=[])
    await graph(other, tools(desk), saver).ainvoke({"messages": [("user", "Book it.")]}, config("thread-2"))
    assert [m.status for m in other.read] == ["success"]
    check_second_conversation([envelope_in(m.content) for m in other.read], faulty_shop)


def test_the_sync_graph_and_a_resend_in_the_same_thread(desk: toolproof.Runner, faulty_shop: FaultyShop) -> None:
    saver = InMemorySaver()
    first = ScriptedChatModel(script=[ORDER], read=[])
    graph(first, tools(desk), saver).invoke({"messages": [("user", "Book it.")]}, config("thread-9"))
    again = ScriptedChatModel(script=[ORDER], read=[])
    graph(again, tools(desk), saver).invoke({"messages": [("user", "Again.")]}, config("thread-9"))
    key = first.read[0].artifact["error"]["idempotency_key"]
    assert again.read[0].artifact["error"]["idempotency_key"] == key
    assert faulty_shop.inserts == 1 and faulty_shop.count_orders() == 1
