"""pydantic-ai: a toolset built from a `Runner` (`toolproof[pydantic-ai]`).

    agent = Agent(model, toolsets=[ToolproofToolset(runner, principal=lambda ctx: ctx.deps.user_id)])

pydantic-ai does not validate the arguments (the toolset's validator only parses JSON, without coercion);
the runner does. Every failure envelope is raised as `ToolFailed`: the model reads the whole envelope in a
`ToolReturnPart` with `outcome="failed"` (a provider's native error channel, e.g. Anthropic `is_error`), and
`ToolFailed` does not consume the tool's retry budget, so a `repair` envelope never ends the run. The
conversation is pydantic-ai's own `RunContext.conversation_id` (the `conversation_id=` of `Agent.run`, or the
one carried by `message_history`), the run is `RunContext.run_id`.

Over MCP (`toolproof serve`): `MCPToolset(..., process_tool_call=mcp_process_tool_call(),
tool_error_behavior="failed")` sends the same ids in `_meta`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic_ai import RunContext, ToolDefinition
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from ..contract.envelope import Envelope
from ..pipeline.runner import Runner
from ._common import Principal, call_context, envelope_text, load_arguments, resolve_principal

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
        context = call_context(ctx.conversation_id, resolve_principal(self.principal, ctx), run_id=ctx.run_id,
                               tool_call_id=ctx.tool_call_id)
        envelope = await self.runner.call(name, arguments, context=context)
        return _answer(envelope)


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
        meta = mcp_meta(ctx.conversation_id, principal=resolve_principal(principal, ctx), run_id=ctx.run_id)
        return await call_tool(name, args, metadata=meta)

    return process


ErrorBehavior = Literal["failed"]
#: The `MCPToolset(tool_error_behavior=...)` to use with `toolproof serve` (see `mcp_process_tool_call`).
MCP_TOOL_ERROR_BEHAVIOR: ErrorBehavior = "failed"
