"""The MCP route: `toolproof serve` in a real subprocess, pydantic-ai (`MCPToolset`) and the OpenAI Agents SDK
(`MCPServerStdio`) as its MCP clients, the conversation sent in `_meta` by `toolproof.integrations`' helpers.
The models are the frameworks' offline test models, scripted to follow conftest's SCRIPT, because no model
provider is reachable from CI. The journal is a SQLite file shared by every `toolproof serve` child."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.integrations.conftest import (
    BUYER,
    ORDER,
    SCRIPT,
    FaultyShop,
    check_first_conversation,
    check_second_conversation,
    envelope_in,
)
from tests.mcp_servers.harness import PY, REPO_ROOT, child_env
from toolproof.integrations.meta import mcp_meta

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
TARGET = "tests.integrations.faulty_desk:toolset"


def serve_env(tmp_path: Path, shop: FaultyShop) -> dict[str, str]:
    return child_env(FAULTY_SHOP_PATH=shop.path, TOOLPROOF_STORE=f"sqlite:///{tmp_path / 'journal.sqlite3'}")


async def test_pydantic_ai_mcp_toolset(tmp_path: Path, faulty_shop: FaultyShop) -> None:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.function import FunctionModel

    from tests.integrations.test_pydantic_ai import Scripted
    from toolproof.integrations.pydantic_ai import MCP_TOOL_ERROR_BEHAVIOR, mcp_process_tool_call

    def toolset() -> MCPToolset[Any]:
        transport = StdioTransport(PY, ["-m", "toolproof", "serve", TARGET], env=serve_env(tmp_path, faulty_shop),
                                   cwd=str(REPO_ROOT))
        return MCPToolset(transport, process_tool_call=mcp_process_tool_call(principal=BUYER),
                          tool_error_behavior=MCP_TOOL_ERROR_BEHAVIOR)

    model = Scripted(SCRIPT)
    await Agent(FunctionModel(model), toolsets=[toolset()]).run("Book it.", conversation_id="chat-1")
    assert [p.outcome for p in model.returns] == ["failed"] * 4
    check_first_conversation(model.read(), faulty_shop)

    other = Scripted((ORDER,))
    await Agent(FunctionModel(other), toolsets=[toolset()]).run("Book it.", conversation_id="chat-2")
    check_second_conversation([_result_envelope(p.content) for p in other.returns], faulty_shop)


async def test_pydantic_ai_mcp_toolset_two_runs_naming_no_conversation_book_once(tmp_path: Path) -> None:
    """pydantic-ai mints a conversation per run; `mcp_process_tool_call` sends none for it, so the second run's
    identical booking is asked about (one row), and a named conversation still replays."""
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.function import FunctionModel

    from tests.integrations.test_pydantic_ai import Scripted
    from toolproof.integrations.pydantic_ai import MCP_TOOL_ERROR_BEHAVIOR, mcp_process_tool_call

    shop = FaultyShop(tmp_path / "orders.sqlite3", lost_replies=0)
    env = {**serve_env(tmp_path, shop), "FAULTY_LOST_REPLIES": "0"}

    async def book(**run: Any) -> dict[str, Any]:
        model = Scripted((ORDER,))
        toolset = MCPToolset(StdioTransport(PY, ["-m", "toolproof", "serve", TARGET], env=env, cwd=str(REPO_ROOT)),
                             process_tool_call=mcp_process_tool_call(principal=BUYER),
                             tool_error_behavior=MCP_TOOL_ERROR_BEHAVIOR, init_timeout=60)
        await Agent(FunctionModel(model), toolsets=[toolset]).run("Book it.", **run)
        (part,) = model.returns
        return _result_envelope(part.content) if part.outcome == "success" else envelope_in(part.model_response_str())

    try:
        first, again = await book(), await book()
        assert first["ok"] is True, first
        assert again["error"]["code"] == "REPEAT_WITHOUT_CONVERSATION", again
        assert again["error"]["state"]["idempotency_key"] == first["meta"]["idempotency_key"]
        assert shop.inserts == 1 and shop.count_orders() == 1
        named = await book(conversation_id="chat-5")
        assert named["result"]["note"] == "New order placed"
        assert (await book(conversation_id="chat-5"))["meta"]["replayed"] is True
        assert shop.inserts == 2 and shop.count_orders() == 2
    finally:
        shop.close()


def _result_envelope(content: Any) -> dict[str, Any]:
    """A success over MCP: the envelope is the tool's `structuredContent` (or its JSON text)."""
    return envelope_in(content if isinstance(content, str) else json.dumps(content))


async def test_openai_agents_mcp_server_stdio(tmp_path: Path, faulty_shop: FaultyShop) -> None:
    from agents import Agent, Runner
    from agents.mcp import MCPServerStdio

    from tests.integrations.test_openai_agents import scripted
    from toolproof import CallContext
    from toolproof.integrations.openai_agents import mcp_tool_meta_resolver

    def server() -> MCPServerStdio:
        params = {"command": PY, "args": ["-m", "toolproof", "serve", TARGET],
                  "env": serve_env(tmp_path, faulty_shop), "cwd": str(REPO_ROOT)}
        return MCPServerStdio(params, tool_meta_resolver=mcp_tool_meta_resolver(), client_session_timeout_seconds=30)

    read: list[dict[str, Any]] = []
    async with server() as mcp:
        agent = Agent(name="desk", model=scripted(SCRIPT, read), mcp_servers=[mcp])
        await Runner.run(agent, "Book it.", context=CallContext(conversation_id="chat-1", principal=BUYER))
    check_first_conversation(read, faulty_shop)

    other: list[dict[str, Any]] = []
    async with server() as mcp:
        agent = Agent(name="desk", model=scripted((ORDER,), other), mcp_servers=[mcp])
        await Runner.run(agent, "Book it.", context={"conversation_id": "chat-2", "principal": BUYER})
    check_second_conversation(other, faulty_shop)


async def test_a_session_per_call_client_never_places_the_resend(tmp_path: Path, faulty_shop: FaultyShop) -> None:
    """Each call opens its own MCP session, so its own `toolproof serve` process; the durable journal and the
    conversation in `_meta` make the resend of the lost order the same operation."""
    params = StdioServerParameters(command=PY, args=["-m", "toolproof", "serve", TARGET],
                                   env=serve_env(tmp_path, faulty_shop), cwd=str(REPO_ROOT))

    async def call(conversation: str) -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=30) as client:
            result = await client.call_tool("place_order", ORDER, meta=mcp_meta(conversation, principal=BUYER))  # type: ignore[arg-type]
        return envelope_in(result.content[0].text)  # type: ignore[union-attr]

    lost, resend = await call("chat-1"), await call("chat-1")
    assert lost["error"]["class"] == resend["error"]["class"] == "outcome_unknown"
    assert resend["error"]["idempotency_key"] == lost["error"]["idempotency_key"]
    assert faulty_shop.inserts == 1 and faulty_shop.count_orders() == 1
    assert (await call("chat-2"))["ok"] is True
    assert faulty_shop.count_orders() == 2
