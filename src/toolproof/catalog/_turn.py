"""Agent integration: export only the tools a message needs, and a `search_tools` meta-tool for gateways."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..contract._context import CallContext
from ..contract._errors import DefinitionError
from ..contract._tool import NAME_RE, Tool
from ..retrieval._index import Hit, ToolIndex
from ._toolset import ExportFormat, Toolset, anthropic_definition, mcp_definition, openai_definition

_EXPORTERS = {"mcp": mcp_definition, "openai": openai_definition, "anthropic": anthropic_definition}

#: With no tool matching the message, a toolset this small is sent whole (the model decides, at little
#: cost); a larger one sends only the `always` tools.
SMALL_TOOLSET: Final = 20


def tools_for_turn(
    toolset: Toolset,
    message: str,
    *,
    k: int = 5,
    fmt: ExportFormat = "openai",
    always: Sequence[str] = (),
    small: int = SMALL_TOOLSET,
) -> list[dict[str, Any]]:
    """The definitions to send with one model turn: up to `k` tools matching `message` plus `always` ones.

    When nothing matches (a greeting, a paraphrase search cannot see, an empty message) no unrelated tool
    is sent in its place: a toolset of at most `small` tools is sent whole, a larger one only its `always`
    tools. Pass the result as `tools=` of the model call; the runner still executes any tool of the toolset.
    """
    names = [h.tool.name for h in toolset.search(message, k=k)]
    if not names and len(toolset) <= small:
        names = toolset.names
    names += [n for n in always if n not in names]
    return toolset.select(names).export(fmt)


def definition_of(hit: Hit, fmt: ExportFormat = "mcp") -> dict[str, Any]:
    """A hit as a definition: the exact export of its `Tool`, or a minimal one in `fmt` for a plain definition.

    A plain definition's name is data (a plugin catalogue may say "Search & Replace"); MCP search results
    carry it as given, but OpenAI and Anthropic reject such a name in `tools=`, so those formats refuse it.
    """
    if hit.tool is not None:
        return _EXPORTERS[fmt](hit.tool)
    params = {name: {"type": "string", "description": desc} for name, desc in hit.entry.parameters}
    schema = {"type": "object", "properties": params}
    if fmt == "mcp":
        return {"name": hit.name, "description": hit.entry.description, "inputSchema": schema}
    if not NAME_RE.match(hit.name):
        raise DefinitionError(f"{hit.id!r}: the {fmt} API rejects the tool name {hit.name!r} (it must match "
                              f"{NAME_RE.pattern}); rename it before sending it as a tool")
    if fmt == "openai":
        return {"type": "function", "function": {"name": hit.name, "description": hit.entry.description,
                                                 "parameters": schema}}
    return {"name": hit.name, "description": hit.entry.description, "input_schema": schema}


def search_tools_tool(
    index: ToolIndex | Toolset,
    *,
    name: str = "search_tools",
    default_k: int = 5,
    max_k: int = 20,
    fmt: ExportFormat = "mcp",
    description: str | None = None,
) -> Tool:
    """A read-only tool the model calls to find tools: `{"query": str, "k"?: int}` -> `{"tools": [...]}`.

    A gateway in front of many upstream tools lists this one (and the few it always shows) instead of all.
    """
    target = index
    text = description or (
        "Find the tools that can do a task. Describe the task in plain words (what to do, on what); "
        f"returns up to {max_k} matching tools, best first, with their names, descriptions and input schemas. "
        "Call the returned tools by name."
    )
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "The task, in plain words."},
            "k": {"type": "integer", "minimum": 1, "maximum": max_k,
                  "description": f"How many tools to return. Default: {default_k}."},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def handler(arguments: Mapping[str, Any], context: CallContext) -> dict[str, Any]:
        k = int(arguments.get("k") or default_k)
        query = str(arguments["query"])
        if isinstance(target, Toolset):
            hits = [(h.tool.name, _EXPORTERS[fmt](h.tool), h.score) for h in target.search(query, k=k)]
        else:
            hits = [(h.id, definition_of(h, fmt), h.score) for h in target.search(query, k=k)]
        found: dict[str, Any] = {"tools": [{"id": i, "score": round(s, 4), "definition": d} for i, d, s in hits]}
        if not hits:
            found["note"] = "No tool matches these words; describe the task differently (other words, the object)."
        return found

    return Tool.from_schema(name, text, schema, handler, effect="read", idempotent=True, title="Search tools")
