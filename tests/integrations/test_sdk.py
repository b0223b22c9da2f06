"""Hand-written loops on the real OpenAI and Anthropic SDK clients with `tool_results`/`atool_results`. The
provider is a scripted HTTP handler (httpx `MockTransport`) following conftest's SCRIPT, because no model
provider is reachable from CI: the SDKs build the requests and parse the replies into their own objects."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import httpx2  # the Anthropic SDK's own fork of httpx
import openai
import pytest

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
from toolproof.integrations.sdk import atool_results, tool_results


class Provider:
    """A scripted model behind HTTP: answers each request with the script's next call, then with text, and
    keeps what it was sent back (the tool results, as the provider's API received them)."""

    def __init__(self, fmt: str, script: tuple[dict[str, Any], ...]) -> None:
        self.fmt, self.script, self.read = fmt, list(script), []  # type: ignore[var-annotated]
        self.errors: list[bool] = []  # Anthropic's is_error on each tool_result

    def __call__(self, request: Any) -> Any:
        """An `httpx` handler, or an `httpx2` one for the Anthropic SDK."""
        body = json.loads(request.content)
        self._take(body)
        args = self.script.pop(0) if self.script else None
        response = httpx2.Response if self.fmt == "anthropic" else httpx.Response
        return response(200, json=getattr(self, f"_{self.fmt}")(args))

    def _take(self, body: dict[str, Any]) -> None:
        if self.fmt == "chat":
            last = body["messages"][-1]
            if last["role"] == "tool":
                self.read.append(envelope_in(last["content"]))
        elif self.fmt == "responses":
            items = [i for i in body["input"] if isinstance(i, dict) and i.get("type") == "function_call_output"]
            if items:
                self.read.append(envelope_in(items[-1]["output"]))
        else:
            content = body["messages"][-1]["content"]
            blocks = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(
                content, list) else []
            if blocks:
                self.read.append(envelope_in(blocks[-1]["content"]))
                self.errors.append(blocks[-1]["is_error"])

    def _chat(self, args: dict[str, Any] | None) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "Done." if args is None else None}
        if args is not None:
            message["tool_calls"] = [{"id": f"call-{len(self.read)}", "type": "function",
                                      "function": {"name": "place_order", "arguments": json.dumps(args)}}]
        finish = "stop" if args is None else "tool_calls"
        return {"id": "cc", "object": "chat.completion", "created": 0, "model": "scripted",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}]}

    def _responses(self, args: dict[str, Any] | None) -> dict[str, Any]:
        item = ({"type": "message", "id": "m", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Done.", "annotations": []}]} if args is None else
                {"type": "function_call", "id": f"fc-{len(self.read)}", "call_id": f"call-{len(self.read)}",
                 "name": "place_order", "arguments": json.dumps(args), "status": "completed"})
        return {"id": "resp", "object": "response", "created_at": 0, "model": "scripted", "status": "completed",
                "output": [item], "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}

    def _anthropic(self, args: dict[str, Any] | None) -> dict[str, Any]:
        block = ({"type": "text", "text": "Done."} if args is None else
                 {"type": "tool_use", "id": f"toolu-{len(self.read)}", "name": "place_order", "input": args})
        return {"id": "msg", "type": "message", "role": "assistant", "model": "scripted", "content": [block],
                "stop_reason": "end_turn" if args is None else "tool_use", "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1}}


def chat_loop(runner: toolproof.Runner, provider: Provider, context: toolproof.CallContext) -> None:
    client = openai.OpenAI(api_key="-", base_url="http://provider/v1",
                           http_client=httpx.Client(transport=httpx.MockTransport(provider)))
    messages: list[Any] = [{"role": "user", "content": "Book 400 kg of onion for Friday."}]
    while True:
        reply = client.chat.completions.create(model="scripted", messages=messages, tools=runner.toolset.to_openai())
        results = tool_results(runner, reply, context)
        if not results:
            return
        messages += [reply.choices[0].message.model_dump(exclude_none=True), *results]


async def responses_loop(runner: toolproof.Runner, provider: Provider, context: toolproof.CallContext) -> None:
    client = openai.AsyncOpenAI(api_key="-", base_url="http://provider/v1",
                                http_client=httpx.AsyncClient(transport=httpx.MockTransport(provider)))
    items: list[Any] = [{"role": "user", "content": "Book 400 kg of onion for Friday."}]
    while True:
        reply = await client.responses.create(model="scripted", input=items)
        results = await atool_results(runner, reply, context)
        if not results:
            return
        items += [o.model_dump(exclude_none=True) for o in reply.output] + results


def anthropic_loop(runner: toolproof.Runner, provider: Provider, context: toolproof.CallContext) -> None:
    client = anthropic.Anthropic(api_key="-", base_url="http://provider",
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(provider)))
    messages: list[Any] = [{"role": "user", "content": "Book 400 kg of onion for Friday."}]
    while True:
        reply = client.messages.create(model="scripted", max_tokens=100, messages=messages,
                                       tools=runner.toolset.to_anthropic())  # type: ignore[arg-type]
        results = tool_results(runner, reply, context)
        if not results:
            return
        messages += [{"role": "assistant", "content": [b.model_dump() for b in reply.content]}, *results]


async def run_loop(fmt: str, runner: toolproof.Runner, provider: Provider, conversation: str) -> None:
    context = toolproof.CallContext(conversation_id=conversation, principal=BUYER)
    if fmt == "responses":
        await responses_loop(runner, provider, context)
    else:
        (chat_loop if fmt == "chat" else anthropic_loop)(runner, provider, context)


@pytest.mark.parametrize("fmt", ["chat", "responses", "anthropic"])
async def test_the_script_through_a_hand_written_loop(fmt: str, desk: toolproof.Runner,
                                                      faulty_shop: FaultyShop) -> None:
    provider = Provider(fmt, SCRIPT)
    await run_loop(fmt, desk, provider, "chat-1")
    check_first_conversation(provider.read, faulty_shop)
    if fmt == "anthropic":
        assert provider.errors == [True] * 4  # Anthropic's own failure mark

    other = Provider(fmt, (ORDER,))
    await run_loop(fmt, desk, other, "chat-2")
    check_second_conversation(other.read, faulty_shop)
    if fmt == "anthropic":
        assert other.errors == [False]


def test_plain_dicts_and_an_unknown_tool(desk: toolproof.Runner) -> None:
    reply = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "get_today_price", "arguments": '{"crop": "onion"}'}},
        {"id": "b", "type": "function", "function": {"name": "order_v2", "arguments": "{}"}},
    ]}
    ok, unknown = tool_results(desk, reply)
    assert (ok["tool_call_id"], json.loads(ok["content"])["ok"]) == ("a", True)
    error = json.loads(unknown["content"])["error"]
    assert (error["code"], error["received"]) == ("UNKNOWN_TOOL", "order_v2")
    assert "place_order" in error["allowed_values"]
    assert tool_results(desk, {"role": "assistant", "content": "Hello."}) == []
    with pytest.raises(ValueError, match="not a Chat Completions"):
        tool_results(desk, {"hello": 1})
