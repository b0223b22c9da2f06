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

Who is asking comes from the run: the `context=` of `Runner.run` when it is a `CallContext`, or any object
or mapping with a `conversation_id` (and `principal`), or an SDK `Session` (its `session_id`); else the
`RunConfig(group_id=...)` the SDK documents as the conversation's grouping id.
"""

from __future__ import annotations

from typing import Any

from agents import FunctionTool, RunContextWrapper
from agents.tool import FunctionToolCustomDataContext
from agents.tool_context import ToolContext
from agents.tracing import SpanError, get_current_span

from ..catalog.toolset import openai_definition
from ..contract.envelope import Envelope
from ..contract.tool import Tool
from ..pipeline.runner import Runner
from ._common import Principal, call_context, envelope_text, field_of, resolve_principal


def function_tools(runner: Runner, *, principal: Principal = None) -> list[FunctionTool]:
    """One `FunctionTool` per tool of the runner. `principal`: a fixed id or a function of the run context
    (`RunContextWrapper`), used when the run's context names none."""
    return [_function_tool(runner, tool, principal) for tool in runner.toolset]


def _function_tool(runner: Runner, tool: Tool, principal: Principal) -> FunctionTool:
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
    `conversation_id`/`principal`, a `Session`), else the run config's `group_id`."""
    source = ctx.context
    conversation = field_of(source, "conversation_id") or field_of(source, "session_id")
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
