"""The approval gate through every framework adapter: a gated write reaches the model as a failure in the
framework's own way (`APPROVAL_REQUIRED`, nothing run), and once a person approves, the same call in the same
conversation runs exactly once (1 row in the example's `orders` table, 1 run of the handler's insert).

The models are each adapter test's own scripted model (no model provider is reachable from CI); the
framework, the runner, the SQLite store the approval lives in and the example's tools are real.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as OpenAIAgent
from agents import Runner as OpenAIRunner
from agents.items import ToolCallOutputItem
from langgraph.checkpoint.memory import InMemorySaver
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

import toolproof
import toolproof.approvals
from tests.approvals._tools import big_order
from tests.integrations.conftest import BUYER, ORDER, FaultyShop, envelope_in, faulty_toolset
from tests.integrations.test_langgraph import ScriptedChatModel, config, graph
from tests.integrations.test_openai_agents import scripted
from tests.integrations.test_pydantic_ai import Scripted
from tests.integrations.test_sdk import Provider, run_loop
from toolproof.integrations.langchain import tools
from toolproof.integrations.openai_agents import function_tools
from toolproof.integrations.pydantic_ai import ToolproofToolset

BIG = {**ORDER, "quantity_kg": 1200}  # above the 1000 kg a buyer may order unapproved


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[FaultyShop]:
    """The example's shop counting every run of its insert; no reply is lost here."""
    found = FaultyShop(tmp_path / "orders.sqlite3", lost_replies=0)
    yield found
    found.close()


@pytest.fixture
def gated_desk(shop: FaultyShop, tmp_path: Path) -> Iterator[toolproof.Runner]:
    """The wholesaler's desk with `place_order` gated on large quantities, over a SQLite store."""
    toolset = toolproof.Toolset(t.with_approval(big_order) if t.name == "place_order" else t
                                for t in faulty_toolset(shop))
    runner = toolproof.Runner(toolset, store=f"sqlite:///{tmp_path / 'toolproof.sqlite3'}")
    yield runner
    runner.close()


def approve_waiting(runner: toolproof.Runner, read: dict[str, Any], shop: FaultyShop) -> None:
    """The model read "a person must approve", nothing ran; then a person approves that request."""
    error = read["error"]
    assert not read["ok"] and (error["code"], error["next_action"]) == ("APPROVAL_REQUIRED", "ask_person"), read
    assert error["retryable"] is False and error["state"]["status"] == "pending"
    assert shop.inserts == 0 and shop.count_orders() == 0
    toolproof.approvals.approve(runner.store, error["state"]["approval_id"], by="ops", note="known buyer")


def check_ran_once(first: dict[str, Any], read: list[dict[str, Any]], shop: FaultyShop) -> None:
    """After approval the same call (same key) placed the order; the repeat replayed it."""
    assert [e["ok"] for e in read] == [True, True], read
    assert read[0]["result"]["note"] == "New order placed"
    assert read[1]["meta"]["replayed"] is True
    assert read[0]["meta"]["idempotency_key"] == first["error"]["idempotency_key"]
    assert shop.inserts == 1 and shop.count_orders() == 1


async def test_pydantic_ai(gated_desk: toolproof.Runner, shop: FaultyShop) -> None:
    async def run(model: Scripted) -> None:
        toolset = ToolproofToolset(gated_desk, principal=BUYER)
        await Agent(FunctionModel(model), toolsets=[toolset]).run("Book 1200 kg.", conversation_id="chat-1")

    asked = Scripted((BIG,))
    await run(asked)
    assert [p.outcome for p in asked.returns] == ["failed"]  # pydantic-ai's own failure mark
    (first,) = asked.read()
    approve_waiting(gated_desk, first, shop)
    again = Scripted((BIG, BIG))
    await run(again)
    assert [p.outcome for p in again.returns] == ["success", "success"]
    check_ran_once(first, again.read(), shop)


async def test_openai_agents(gated_desk: toolproof.Runner, shop: FaultyShop) -> None:
    context = toolproof.CallContext(conversation_id="chat-1", principal=BUYER)

    async def run(script: tuple[dict[str, Any], ...], read: list[dict[str, Any]]) -> list[bool]:
        agent = OpenAIAgent(name="desk", model=scripted(script, read), tools=function_tools(gated_desk))
        result = await OpenAIRunner.run(agent, "Book 1200 kg.", context=context)
        return [o.custom_data["toolproof"]["ok"] for o in result.new_items
                if isinstance(o, ToolCallOutputItem) and o.custom_data]

    first: list[dict[str, Any]] = []
    assert await run((BIG,), first) == [False]
    approve_waiting(gated_desk, first[0], shop)
    again: list[dict[str, Any]] = []
    assert await run((BIG, BIG), again) == [True, True]
    check_ran_once(first[0], again, shop)


async def test_langgraph(gated_desk: toolproof.Runner, shop: FaultyShop) -> None:
    saver = InMemorySaver()
    asked = ScriptedChatModel(script=[BIG], read=[])
    await graph(asked, tools(gated_desk), saver).ainvoke({"messages": [("user", "Book 1200 kg.")]}, config("t-1"))
    assert [m.status for m in asked.read] == ["error"]  # LangChain's own failure mark
    first = envelope_in(asked.read[0].content)
    approve_waiting(gated_desk, first, shop)
    again = ScriptedChatModel(script=[BIG, BIG], read=[])
    await graph(again, tools(gated_desk), saver).ainvoke({"messages": [("user", "Approved.")]}, config("t-1"))
    assert [m.status for m in again.read] == ["success", "success"]
    check_ran_once(first, [json.loads(m.content) for m in again.read], shop)


@pytest.mark.parametrize("fmt", ["chat", "responses", "anthropic"])
async def test_the_plain_sdk_helper(fmt: str, gated_desk: toolproof.Runner, shop: FaultyShop) -> None:
    asked = Provider(fmt, (BIG,))
    await run_loop(fmt, gated_desk, asked, "chat-1")
    approve_waiting(gated_desk, asked.read[0], shop)
    again = Provider(fmt, (BIG, BIG))
    await run_loop(fmt, gated_desk, again, "chat-1")
    check_ran_once(asked.read[0], again.read, shop)
    if fmt == "anthropic":
        assert (asked.errors, again.errors) == ([True], [False, False])  # Anthropic's own failure mark
