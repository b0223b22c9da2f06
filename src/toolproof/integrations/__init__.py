"""toolproof inside the agent frameworks: each adapter hands the model's raw arguments to a `Runner` and the
whole envelope back to the model, marked as a failure the framework's own way when `ok` is false.

One module per framework, each behind its extra (see docs/integrations.md):

- `toolproof.integrations.pydantic_ai`: `ToolproofToolset(runner)` (`toolproof[pydantic-ai]`);
- `toolproof.integrations.openai_agents`: `function_tools(runner)` (`toolproof[openai-agents]`);
- `toolproof.integrations.langchain`: `tools(runner)` for LangChain / LangGraph (`toolproof[langchain]`);
- `toolproof.integrations.sdk`: `tool_results(runner, reply)` for loops written on the OpenAI or Anthropic SDK;
- `toolproof.integrations.meta`: `mcp_meta(...)`, the `_meta` that names the conversation over MCP;
- `toolproof.integrations.temporal`: `activities(runner)` and `call_tool` (`toolproof[temporal]`), and
  `toolproof.integrations.dbos`: `tool_step(runner)` (`toolproof[dbos]`), and
  `toolproof.integrations.pydantic_ai_temporal`: `TemporalToolproofToolset(runner)` for pydantic-ai's
  durable agents on Temporal: see docs/durable.md.

Who is asking comes from the framework (its conversation or thread id and, where it has one, the user), never
from the model's arguments.
"""

__all__: list[str] = []  # one module per framework, each imported by name (its extra may be missing)
