"""LangChain / LangGraph: the runner's tools as LangChain tools (`toolproof[langchain]`).

    graph = create_react_agent(model, tools(runner))
    graph.invoke({"messages": [...]}, {"configurable": {"thread_id": chat.id, "user_id": user.id}})

The tool's `args_schema` is toolproof's JSON Schema, so LangChain hands the model's arguments through without
validating or coercing them. Called with a tool call (as `ToolNode` does), a tool answers with a
`ToolMessage` whose content is the envelope's JSON and whose `artifact` is the envelope as a dict;
`status="error"` when `ok` is false. Neither `ToolNode` nor the tool keeps a retry counter: a `repair`
envelope costs one step of the graph's `recursion_limit`. The conversation is LangGraph's
`config["configurable"]["thread_id"]`, the principal `config["configurable"]["user_id"]` (`principal_key`).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import CallbackManagerForToolRun
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from ..contract._envelope import Envelope
from ..pipeline._runner import Runner
from ._common import call_context, envelope_text, field_of

#: The id of the tool call being run: `BaseTool.run` knows it, `_run` is not given it.
_TOOL_CALL_ID: ContextVar[str | None] = ContextVar("toolproof_langchain_tool_call_id", default=None)


class ToolproofTool(BaseTool):
    """One tool of a runner, run through it; see the module docstring."""

    runner: Runner
    principal_key: str = "user_id"

    def run(self, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any) -> Any:
        token = _TOOL_CALL_ID.set(tool_call_id)
        try:
            return super().run(tool_input, *args, tool_call_id=tool_call_id, **kwargs)
        finally:
            _TOOL_CALL_ID.reset(token)

    async def arun(self, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any) -> Any:
        token = _TOOL_CALL_ID.set(tool_call_id)
        try:
            return await super().arun(tool_input, *args, tool_call_id=tool_call_id, **kwargs)
        finally:
            _TOOL_CALL_ID.reset(token)

    def _run(self, *, config: RunnableConfig, run_manager: CallbackManagerForToolRun | None = None,
             **arguments: Any) -> Any:
        envelope = self.runner.call_sync(self.name, arguments, context=self._context(config))
        return self._answer(envelope)

    async def _arun(self, *, config: RunnableConfig, run_manager: Any = None, **arguments: Any) -> Any:
        envelope = await self.runner.call(self.name, arguments, context=self._context(config))
        return self._answer(envelope)

    def _context(self, config: RunnableConfig) -> Any:
        configurable = config.get("configurable") or {}
        return call_context(field_of(configurable, "thread_id"), field_of(configurable, self.principal_key),
                            tool_call_id=_TOOL_CALL_ID.get())

    def _answer(self, envelope: Envelope) -> Any:
        """A `ToolMessage` for a tool call (status `error` on failure), else the envelope as a dict."""
        call_id = _TOOL_CALL_ID.get()
        if call_id is None:
            return envelope.to_dict()
        return ToolMessage(content=envelope_text(envelope), artifact=envelope.to_dict(), tool_call_id=call_id,
                           name=self.name, status="success" if envelope.ok else "error")


def tools(runner: Runner, *, principal_key: str = "user_id") -> list[BaseTool]:
    """One LangChain tool per tool of the runner (for `ToolNode`, `create_react_agent`, `bind_tools`)."""
    return [
        ToolproofTool(name=tool.name, description=tool.description, args_schema=dict(tool.input_schema),
                      runner=runner, principal_key=principal_key)
        for tool in runner.toolset
    ]
