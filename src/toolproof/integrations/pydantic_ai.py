"""pydantic-ai: a toolset built from a `Runner` (`toolproof[pydantic-ai]`).

    agent = Agent(model, toolsets=[ToolproofToolset(runner, principal=lambda ctx: ctx.deps.user_id)])

pydantic-ai does not validate the arguments (the toolset's validator only parses JSON, without coercion);
the runner does. Every failure envelope is raised as `ToolFailed`: the model reads the whole envelope in a
`ToolReturnPart` with `outcome="failed"` (a provider's native error channel, e.g. Anthropic `is_error`), and
`ToolFailed` does not consume the tool's retry budget, so a `repair` envelope never ends the run. The run is
`RunContext.run_id`.

The conversation is pydantic-ai's `RunContext.conversation_id` when the caller named it: the
`conversation_id=` of `Agent.run`, or the one `message_history` carries from a run that named it. A run
given neither gets a fresh UUID7 from pydantic-ai (a durable engine's run: a UUID5 of its run id); that id
is no conversation (two runs of the same booking would otherwise be two bookings), so it reaches the
runner as `conversation_id=None` ("Who is asking" in docs/idempotency.md). `named_conversation` tells them
apart from the run's own messages: the conversation's first message names the run that started it, and a
minted id is a UUID7 of that run's start (within `MINT_WINDOW_MS`) or the durable UUID5 of its run id.

Over MCP (`toolproof serve`): `MCPToolset(..., process_tool_call=mcp_process_tool_call(),
tool_error_behavior="failed")` sends the same ids in `_meta`.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, Final, Literal

from pydantic_ai import RunContext, ToolDefinition
from pydantic_ai.durable_exec import conversation_id_from_run_id
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from ..contract._envelope import Envelope
from ..pipeline._runner import Runner
from ._common import Principal, call_context, envelope_text, load_arguments, resolve_principal

__all__ = ["MCP_TOOL_ERROR_BEHAVIOR", "MINT_WINDOW_MS", "ToolproofToolset", "mcp_process_tool_call",
           "named_conversation"]

#: How close (ms) a UUID7 conversation id must be to its run's start to count as minted by pydantic-ai. A
#: UUID7 the caller made within this window of starting the run is read as minted too: the safe direction
#: (a repeat is asked about, never booked twice).
MINT_WINDOW_MS: Final = 1000

#: Where a non-object argument value (a list, a string that is not JSON) waits for the runner to reject it.
_NOT_AN_OBJECT = "__toolproof_raw_arguments__"


class _RawArguments:
    """An `args_validator` that parses JSON and validates nothing: the runner validates, with its envelope."""

    def validate_json(self, input: str | bytes | bytearray, **_: Any) -> dict[str, Any]:
        return _as_dict(load_arguments(bytes(input) if isinstance(input, bytearray) else input))

    def validate_python(self, input: Any, **_: Any) -> dict[str, Any]:
        return _as_dict(input)


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {_NOT_AN_OBJECT: value}


class ToolproofToolset(AbstractToolset[Any]):
    """The runner's tools as a pydantic-ai toolset: strict schemas, raw arguments, the envelope as the result.

    `principal`: the signed-in user, a fixed id or a function of the `RunContext` (e.g. `lambda ctx:
    ctx.deps.user_id`); the conversation and run come from the `RunContext`.
    """

    def __init__(self, runner: Runner, *, principal: Principal = None, id: str | None = None) -> None:
        self.runner = runner
        self.principal = principal
        self._id = id
        self._validator = _RawArguments()

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {
            tool.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=tool.name,
                    description=tool.description,
                    parameters_json_schema=tool.input_schema,
                    metadata={"effect": tool.effect, "idempotent": tool.idempotent},
                ),
                max_retries=ctx.max_retries,
                args_validator=self._validator,
            )
            for tool in self.runner.toolset
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        arguments: Any = tool_args.get(_NOT_AN_OBJECT, tool_args) if len(tool_args) == 1 else tool_args
        context = call_context(named_conversation(ctx), resolve_principal(self.principal, ctx), run_id=ctx.run_id,
                               tool_call_id=ctx.tool_call_id)
        envelope = await self.runner.call(name, arguments, context=context)
        return _answer(envelope)


def named_conversation(ctx: RunContext[Any]) -> str | None:
    """The run's conversation if the caller named it, None if pydantic-ai made it up for this run.

    The first message that carries the conversation was stamped by the run that started it (this run, or
    one in `message_history`): a conversation minted there stays "no conversation" in every later run that
    continues its history, so a resend in the next run is keyed as the first write was.
    """
    conversation = ctx.conversation_id
    if not conversation:
        return None
    origin_run, origin_time = _origin(conversation, ctx.messages, ctx.run_id)
    return None if _minted(conversation, origin_run, origin_time) else conversation


def _origin(conversation: str, messages: Sequence[Any], run_id: str | None) -> tuple[str | None, datetime | None]:
    """The run that started a conversation and the time of its first message (this run's when none says)."""
    for message in messages:
        if getattr(message, "conversation_id", None) == conversation:
            return getattr(message, "run_id", None) or run_id, getattr(message, "timestamp", None)
    return run_id, None


def _minted(conversation: str, run_id: str | None, first_message: datetime | None) -> bool:
    """pydantic-ai's own id for a run that named no conversation: the durable UUID5, or a UUID7 of its start."""
    if run_id is not None and conversation == conversation_id_from_run_id(run_id):
        return True
    minted_ms = _uuid7_ms(conversation)
    if minted_ms is None:
        return False
    started_ms = _uuid7_ms(run_id) if run_id is not None else None
    if started_ms is None and first_message is not None:
        started_ms = int(first_message.timestamp() * 1000)
    return started_ms is None or abs(minted_ms - started_ms) <= MINT_WINDOW_MS


def _uuid7_ms(text: str) -> int | None:
    """The millisecond timestamp of a UUID version 7, else None."""
    try:
        parsed = uuid.UUID(text)
    except ValueError:
        return None
    return parsed.int >> 80 if parsed.version == 7 else None


def _answer(envelope: Envelope) -> Any:
    """A success returns the envelope (a dict the model reads as JSON); a failure raises `ToolFailed` with it."""
    if not envelope.ok:
        raise ToolFailed(envelope_text(envelope))
    return envelope.to_dict()


CallToolFunc = Callable[..., Awaitable[Any]]


def mcp_process_tool_call(
    principal: Principal = None,
) -> Callable[[RunContext[Any], CallToolFunc, str, dict[str, Any]], Awaitable[Any]]:
    """A `process_tool_call` for `MCPToolset` that sends the run's conversation (and principal) in `_meta`.

    Use it with `tool_error_behavior="failed"`: the default `"retry"` turns every failure envelope into
    `ModelRetry`, which spends the tool's retry budget and ends the run after `max_retries`.
    """
    from .meta import mcp_meta

    async def process(ctx: RunContext[Any], call_tool: CallToolFunc, name: str, args: dict[str, Any]) -> Any:
        meta = mcp_meta(named_conversation(ctx), principal=resolve_principal(principal, ctx), run_id=ctx.run_id)
        return await call_tool(name, args, metadata=meta)

    return process


ErrorBehavior = Literal["failed"]
#: The `MCPToolset(tool_error_behavior=...)` to use with `toolproof serve` (see `mcp_process_tool_call`).
MCP_TOOL_ERROR_BEHAVIOR: ErrorBehavior = "failed"
