"""Who is asking, where each framework's users name it: a conversation the caller named replays a repeat, one
the framework made up is no conversation (a repeat is asked about, never booked twice).

Each framework runs its own agent loop with its own offline test model (no model provider is reachable from
CI): pydantic-ai's `FunctionModel`, the OpenAI Agents SDK's `ScriptedModel`. The runner, the journal and the
example's `place_order` on a real SQLite `orders` table are real; no reply is lost here, so every repeat is
a plain second run of the same booking, and the rows in `orders` say how many were booked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as OpenAIAgent
from agents import RunConfig, SQLiteSession
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

import toolproof
from tests.integrations.conftest import BUYER, ORDER, FaultyShop, faulty_toolset
from tests.integrations.test_openai_agents import scripted
from tests.integrations.test_pydantic_ai import Scripted
from toolproof.integrations.openai_agents import Runner, function_tools
from toolproof.integrations.pydantic_ai import ToolproofToolset

#: A UUID7 made on 2025-01-01, long before any run here: an id the caller keeps, in the format pydantic-ai mints.
OLD_UUID7 = "01941f29-7c00-7000-8000-000000000001"


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[FaultyShop]:
    """The example's shop, every insert counted; no reply is lost."""
    found = FaultyShop(tmp_path / "orders.sqlite3", lost_replies=0)
    yield found
    found.close()


@pytest.fixture
def desk(shop: FaultyShop) -> Iterator[toolproof.Runner]:
    runner = toolproof.Runner(faulty_toolset(shop))
    yield runner
    runner.close()


async def book_with_pydantic_ai(desk: toolproof.Runner, **run: Any) -> tuple[dict[str, Any], Any]:
    """One `agent.run` whose model books ORDER once: the envelope it read, and the run's result."""
    model = Scripted((ORDER,))
    agent = Agent(FunctionModel(model), toolsets=[ToolproofToolset(desk, principal=BUYER)])
    result = await agent.run("Book 400 kg of onion for Friday.", **run)
    (read,) = model.read()
    return read, result


def asked_about(read: dict[str, Any], first: dict[str, Any]) -> None:
    """The repeat was not booked: the model reads a clarification naming the first booking."""
    error = read.get("error") or {}
    assert (error.get("class"), error.get("code")) == ("needs_clarification", "REPEAT_WITHOUT_CONVERSATION"), read
    assert error["state"]["idempotency_key"] == first["meta"]["idempotency_key"]


async def test_pydantic_ai_two_runs_naming_no_conversation_book_once(desk: toolproof.Runner,
                                                                      shop: FaultyShop) -> None:
    first, one = await book_with_pydantic_ai(desk)
    again, two = await book_with_pydantic_ai(desk)
    assert one.conversation_id != two.conversation_id  # pydantic-ai minted one per run
    assert first["ok"] is True
    asked_about(again, first)
    assert shop.inserts == 1 and shop.count_orders() == 1


async def test_pydantic_ai_a_named_conversation_replays_and_others_stay_apart(desk: toolproof.Runner,
                                                                               shop: FaultyShop) -> None:
    first, _ = await book_with_pydantic_ai(desk, conversation_id="chat-1")
    again, _ = await book_with_pydantic_ai(desk, conversation_id="chat-1")
    assert again["ok"] is True and again["meta"]["replayed"] is True
    assert again["result"] == first["result"]
    assert shop.count_orders() == 1
    other, _ = await book_with_pydantic_ai(desk, conversation_id=OLD_UUID7)  # a kept UUID7 is a name too
    assert other["ok"] is True and other["result"]["note"] == "New order placed"
    assert (await book_with_pydantic_ai(desk, conversation_id=OLD_UUID7))[0]["meta"]["replayed"] is True
    assert shop.inserts == 2 and shop.count_orders() == 2


async def test_pydantic_ai_history_continues_what_its_first_run_named(desk: toolproof.Runner,
                                                                      shop: FaultyShop) -> None:
    """The history of a named run names the conversation; the history of a minted one names none."""
    first, named = await book_with_pydantic_ai(desk, conversation_id="chat-3")
    again, _ = await book_with_pydantic_ai(desk, message_history=named.all_messages())
    assert again["meta"]["replayed"] is True and again["result"] == first["result"]

    unnamed_first, unnamed = await book_with_pydantic_ai(desk)
    assert unnamed_first["result"]["note"] == "New order placed"  # no conversation: not chat-3's order
    repeat, continued = await book_with_pydantic_ai(desk, message_history=unnamed.all_messages())
    assert continued.conversation_id == unnamed.conversation_id  # pydantic-ai carried its minted id on
    asked_about(repeat, unnamed_first)
    assert shop.inserts == 2 and shop.count_orders() == 2


async def book_with_openai_agents(desk: toolproof.Runner, **run: Any) -> dict[str, Any]:
    """One `Runner.run` (toolproof's, the SDK's own underneath) whose model books ORDER once."""
    read: list[dict[str, Any]] = []
    agent = OpenAIAgent(name="desk", model=scripted((ORDER,), read), tools=function_tools(desk, principal=BUYER))
    await Runner.run(agent, "Book 400 kg of onion for Friday.", **run)
    (envelope,) = read
    return envelope


async def test_openai_agents_conversation_id_where_the_sdk_takes_it(desk: toolproof.Runner,
                                                                    shop: FaultyShop) -> None:
    first = await book_with_openai_agents(desk, conversation_id="conv_8812")
    again = await book_with_openai_agents(desk, conversation_id="conv_8812")
    assert first["ok"] is True and again["meta"]["replayed"] is True
    assert again["result"] == first["result"]
    assert shop.count_orders() == 1
    assert (await book_with_openai_agents(desk, conversation_id="conv_other"))["result"]["note"] == "New order placed"
    assert shop.inserts == 2 and shop.count_orders() == 2


async def test_openai_agents_session_where_the_sdk_takes_it(desk: toolproof.Runner, shop: FaultyShop) -> None:
    first = await book_with_openai_agents(desk, session=SQLiteSession("chat-9"))
    again = await book_with_openai_agents(desk, session=SQLiteSession("chat-9"))
    assert first["ok"] is True and again["meta"]["replayed"] is True
    assert shop.inserts == 1 and shop.count_orders() == 1


async def test_openai_agents_naming_nothing_is_asked_about(desk: toolproof.Runner, shop: FaultyShop) -> None:
    """No conversation, session or group: a repeat is asked about; a `previous_response_id` (one link of a
    chain, new every turn) is no conversation either."""
    first = await book_with_openai_agents(desk)
    asked_about(await book_with_openai_agents(desk), first)
    asked_about(await book_with_openai_agents(desk, previous_response_id="resp_1"), first)
    assert shop.inserts == 1 and shop.count_orders() == 1
    grouped = await book_with_openai_agents(desk, run_config=RunConfig(group_id="chat-5"))
    assert grouped["result"]["note"] == "New order placed"
    assert shop.count_orders() == 2


async def test_openai_agents_a_streamed_run_names_it_too(desk: toolproof.Runner, shop: FaultyShop) -> None:
    first = await book_with_openai_agents(desk, conversation_id="conv_streamed")
    read: list[dict[str, Any]] = []
    agent = OpenAIAgent(name="desk", model=scripted((ORDER,), read), tools=function_tools(desk, principal=BUYER))
    streamed = Runner.run_streamed(agent, "Book it again.", None, 10, conversation_id="conv_streamed")
    async for _ in streamed.stream_events():
        pass
    assert read[0]["meta"]["replayed"] is True and read[0]["result"] == first["result"]
    assert shop.inserts == 1 and shop.count_orders() == 1
