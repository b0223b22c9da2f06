"""OpenAI Agents SDK: the runner's tools as `FunctionTool`s (`toolproof[openai-agents]`).

    agent = Agent(name="desk", tools=function_tools(runner))
    await agents.Runner.run(agent, text, context=CallContext(conversation_id=chat.id, principal=user.id))

Each tool has toolproof's strict schema (OpenAI strict mode: optional parameters nullable) and gets the raw
JSON text of the call (`on_invoke_tool(ctx, json_str)`), which goes to the runner unparsed: the SDK validates
and coerces nothing. The model reads the whole envelope as the function output (the Responses and Chat
Completions APIs have no error flag on a function output); a failure envelope is marked the way the SDK marks
a tool that failed and was handled: a `SpanError` on the tool's function span. The envelope is also
attached to the output item as `custom_data` (`ToolCallOutputItem.custom_data["toolproof"]`), for code that
reads the run. The SDK has no per-tool retry counter: a `repair` envelope costs one turn of `max_turns`.

Who is asking comes from the run, in the order the SDK itself groups runs: the `context=` of `Runner.run`
when it is a `CallContext`, or any object or mapping with a `conversation_id` (and `principal`), or an SDK
`Session` (its `session_id`); else the `conversation_id=` or `session=` of the run; else the
`RunConfig(group_id=...)` the SDK documents as the conversation's grouping id. The SDK does not hand a
run's `conversation_id=` or `session=` to its tools, so they are read when the run is started with this
module's `Runner` (the SDK's `Runner`, recording them for the run's tools). A `previous_response_id` is one
link of a chain, new every turn: it names no conversation. A run naming none of these is "no
conversation" (docs/idempotency.md, "Who is asking"): a repeated write is asked about, never run twice.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import agents
from agents import FunctionTool, RunContextWrapper
from agents.tool import FunctionToolCustomDataContext
from agents.tool_context import ToolContext
from agents.tracing import SpanError, get_current_span

from ..catalog._toolset import openai_definition
from ..contract._envelope import Envelope
from ..contract._tool import Tool
from ..pipeline._runner import Runner as ToolproofRunner
from ._common import Principal, call_context, envelope_text, field_of, resolve_principal

__all__ = ["Runner", "conversation_of", "function_tools", "mcp_tool_meta_resolver"]

#: The conversation a `Runner.run` call named (`conversation_id=`, else `session=`), for the tools it runs.
_RUN_CONVERSATION: ContextVar[str | None] = ContextVar("toolproof_openai_agents_conversation", default=None)


class Runner(agents.Runner):
    """The SDK's `Runner`, whose runs also tell toolproof's tools the `conversation_id=` or `session=` they
    were given (the SDK keeps both from its tools). Use it where you use `agents.Runner`."""

    @classmethod
    async def run(cls, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        token = _RUN_CONVERSATION.set(_named_by_run(input, kwargs))
        try:
            return await super().run(starting_agent, input, **kwargs)
        finally:
            _RUN_CONVERSATION.reset(token)

    @classmethod
    def run_sync(cls, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        token = _RUN_CONVERSATION.set(_named_by_run(input, kwargs))
        try:
            return super().run_sync(starting_agent, input, **kwargs)
        finally:
            _RUN_CONVERSATION.reset(token)

    @classmethod
    def run_streamed(cls, starting_agent: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
        # The streamed run's task is created in here and copies this context: it keeps the value after reset.
        # The SDK's run_streamed also takes its options by position: bind them to read the two that name.
        options = inspect.signature(agents.Runner.run_streamed).bind(starting_agent, input, *args, **kwargs)
        token = _RUN_CONVERSATION.set(_named_by_run(input, options.arguments))
        try:
            return super().run_streamed(starting_agent, input, *args, **kwargs)
        finally:
            _RUN_CONVERSATION.reset(token)


def _named_by_run(input: Any, options: Mapping[str, Any]) -> str | None:
    """The SDK's own grouping order: a stored conversation, then a session (a resumed `RunState` keeps its
    conversation)."""
    conversation = options.get("conversation_id") or getattr(input, "_conversation_id", None)
    if isinstance(conversation, str) and conversation.strip():
        return conversation.strip()
    session = options.get("session")
    try:
        session_id = session.session_id if session is not None else None
    except Exception:  # a session whose id cannot be read names nothing, as the SDK treats it
        return None
    return session_id.strip() if isinstance(session_id, str) and session_id.strip() else None


def function_tools(runner: ToolproofRunner, *, principal: Principal = None) -> list[FunctionTool]:
    """One `FunctionTool` per tool of the runner. `principal`: a fixed id or a function of the run context
    (`RunContextWrapper`), used when the run's context names none."""
    return [_function_tool(runner, tool, principal) for tool in runner.toolset]


def _function_tool(runner: ToolproofRunner, tool: Tool, principal: Principal) -> FunctionTool:
    definition = openai_definition(tool)["function"]

    async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
        conversation, who = conversation_of(ctx, principal)
        context = call_context(conversation, who, tool_call_id=ctx.tool_call_id)
        envelope = await runner.call(tool.name, arguments, context=context)
        if not envelope.ok:
            _mark_failed(tool.name, envelope)
        return envelope_text(envelope)

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=definition["parameters"],
        on_invoke_tool=invoke,
        strict_json_schema=bool(definition["strict"]),
        custom_data_extractor=_envelope_data,
    )


def conversation_of(ctx: RunContextWrapper[Any], principal: Principal = None) -> tuple[str | None, str | None]:
    """(conversation, principal) of a run: its context (a `CallContext`, an object or mapping with
    `conversation_id`/`principal`, a `Session`), else what `Runner.run` was given, else the run config's
    `group_id`."""
    source = ctx.context
    conversation = field_of(source, "conversation_id") or field_of(source, "session_id") or _RUN_CONVERSATION.get()
    if conversation is None:
        run_config = getattr(ctx, "run_config", None)
        conversation = field_of(run_config, "group_id")
    return conversation, field_of(source, "principal") or resolve_principal(principal, ctx)


def _mark_failed(tool_name: str, envelope: Envelope) -> None:
    """Record the failure on the function span, as the SDK does for a tool error it handled."""
    assert envelope.error is not None
    span = get_current_span()
    if span is not None:
        span.set_error(SpanError(message="Error running tool", data={
            "tool_name": tool_name, "error": f"{envelope.error.error_class.value}: {envelope.error.code}",
        }))


def _envelope_data(data: FunctionToolCustomDataContext) -> dict[str, Any] | None:
    """The envelope on the output item (`custom_data["toolproof"]`): SDK-only, never sent to the model."""
    try:
        return {"toolproof": Envelope.from_json(data.output).to_dict()}
    except (ValueError, TypeError):
        return None


def mcp_tool_meta_resolver(principal: Principal = None) -> Any:
    """A `tool_meta_resolver` for `MCPServerStdio`/`MCPServerStreamableHttp` that sends the run's
    conversation (and principal) in `_meta`, from the same sources as `function_tools`."""
    from agents.mcp.util import MCPToolMetaContext

    from .meta import mcp_meta

    def resolve(meta_ctx: MCPToolMetaContext) -> dict[str, Any]:
        conversation, who = conversation_of(meta_ctx.run_context, principal)
        return mcp_meta(conversation, principal=who)

    return resolve
