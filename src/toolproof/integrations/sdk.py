"""Loops written by hand on the provider SDKs: a model's reply in, the tool-result messages to send back out.

    reply = client.chat.completions.create(model=..., messages=messages, tools=runner.toolset.to_openai())
    messages += [reply.choices[0].message.model_dump(exclude_none=True), *tool_results(runner, reply, context)]

`tool_results(runner, reply, context)` (and `await atool_results(...)`) takes an OpenAI Chat Completions reply
(a `ChatCompletion` or its message), an OpenAI Responses reply (a `Response`), or an Anthropic `Message`, as
SDK objects or plain dicts, runs every tool call in it through the runner, and returns the messages to append:
Chat Completions `{"role": "tool", ...}` messages, Responses `function_call_output` items, or one Anthropic
`user` message of `tool_result` blocks. The arguments go to the runner exactly as the model wrote them (the
JSON text of OpenAI's `arguments`, Anthropic's `input` object). Every result's content is the whole
envelope; Anthropic's `is_error` is set on a failure (OpenAI's function outputs have no error flag: the model
reads `"ok": false`). A hand-written loop has no retry counter to trip.

Who is asking: `context` (a `CallContext`); a Responses reply made in a stored conversation gives its
`conversation.id` when `context` names none. A tool the toolset does not have is answered with
`invalid_argument` / `UNKNOWN_TOOL` naming the tools that exist.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..contract._context import CallContext
from ..contract._envelope import Envelope, Meta
from ..contract._errors import InvalidArgument
from ..pipeline._runner import Runner
from ._common import envelope_text, field_of

Format = Literal["chat", "responses", "anthropic"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a reply: its id, the tool's name and the arguments as the model sent them."""

    call_id: str
    name: str
    arguments: Any


def tool_calls(reply: Any) -> tuple[Format, list[ToolCall]]:
    """The format of a reply and the tool calls in it, in order."""
    data = _as_dict(reply)
    if "choices" in data:  # a ChatCompletion: its first choice's message
        data = _as_dict(data["choices"][0]["message"])
    if data.get("type") == "message" and isinstance(data.get("content"), list):
        blocks = [b for b in data["content"] if b.get("type") == "tool_use"]
        return "anthropic", [ToolCall(b["id"], b["name"], b.get("input")) for b in blocks]
    if isinstance(data.get("output"), list):
        items = [i for i in data["output"] if i.get("type") == "function_call"]
        return "responses", [ToolCall(i["call_id"], i["name"], i.get("arguments")) for i in items]
    if data.get("role") == "assistant":
        calls = data.get("tool_calls") or []
        return "chat", [ToolCall(c["id"], c["function"]["name"], c["function"].get("arguments")) for c in calls]
    raise ValueError("not a Chat Completions, Responses or Anthropic Messages reply")


def tool_results(runner: Runner, reply: Any, context: CallContext | None = None) -> list[dict[str, Any]]:
    """Run the reply's tool calls (synchronously) and return the messages to send back."""
    fmt, calls = tool_calls(reply)
    ctx = _context(reply, context)
    return _messages(fmt, [(c, _run_sync(runner, c, ctx)) for c in calls])


async def atool_results(runner: Runner, reply: Any, context: CallContext | None = None) -> list[dict[str, Any]]:
    """`tool_results` for async loops: the calls run one after the other, in the reply's order."""
    fmt, calls = tool_calls(reply)
    ctx = _context(reply, context)
    answered = []
    for call in calls:
        known = _unknown(runner, call)
        answered.append((call, known or await runner.call(call.name, call.arguments, context=_for(ctx, call))))
    return _messages(fmt, answered)


def _run_sync(runner: Runner, call: ToolCall, ctx: CallContext) -> Envelope:
    return _unknown(runner, call) or runner.call_sync(call.name, call.arguments, context=_for(ctx, call))


def _unknown(runner: Runner, call: ToolCall) -> Envelope | None:
    """`invalid_argument` for a tool name the toolset does not have (a hand loop has no other answer)."""
    if call.name in runner.toolset:
        return None
    error = InvalidArgument(f"There is no tool called {call.name!r}.", code="UNKNOWN_TOOL", received=call.name,
                            allowed_values=runner.toolset.names, hint="Call one of the tools in allowed_values.")
    return Envelope.failure(error, Meta(call.name, call.call_id))


def _context(reply: Any, context: CallContext | None) -> CallContext:
    if context is not None and context.conversation_id is not None:
        return context
    conversation = _as_dict(reply).get("conversation")
    found = field_of(conversation, "id") if isinstance(conversation, Mapping) else None
    base = context or CallContext()
    return base.with_updates(conversation_id=found) if found else base


def _for(ctx: CallContext, call: ToolCall) -> CallContext:
    return ctx.with_updates(metadata={**ctx.metadata, "tool_call_id": call.call_id})


def _messages(fmt: Format, answered: list[tuple[ToolCall, Envelope]]) -> list[dict[str, Any]]:
    if fmt == "anthropic":
        blocks = [_ANSWER["anthropic"](c, e) for c, e in answered]
        return [{"role": "user", "content": blocks}] if blocks else []
    return [_ANSWER[fmt](c, e) for c, e in answered]


_ANSWER: dict[Format, Callable[[ToolCall, Envelope], dict[str, Any]]] = {
    "chat": lambda c, e: {"role": "tool", "tool_call_id": c.call_id, "content": envelope_text(e)},
    "responses": lambda c, e: {"type": "function_call_output", "call_id": c.call_id, "output": envelope_text(e)},
    "anthropic": lambda c, e: {"type": "tool_result", "tool_use_id": c.call_id, "content": envelope_text(e),
                               "is_error": not e.ok},
}


def _as_dict(value: Any) -> dict[str, Any]:
    """A plain dict of an SDK object (pydantic `model_dump()`) or of a mapping."""
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        result = dump()
        if isinstance(result, dict):
            return result
    raise TypeError(f"expected an SDK reply or a dict, got {type(value).__name__}")
