"""A `Toolset`: tools by unique name, exported in the exact formats of MCP, OpenAI and Anthropic."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, Literal

from .._extras import needs_extra
from ..contract._envelope import success_envelope_schema
from ..contract._errors import DefinitionError, UnknownTool
from ..contract._tool import Tool

if TYPE_CHECKING:
    from ..retrieval._hybrid import Fusion
    from ..retrieval._index import RetrieverName, ToolHit, ToolIndex

ExportFormat = Literal["mcp", "openai", "anthropic"]
EXPORT_FORMATS: Final = ("mcp", "openai", "anthropic")


class Toolset:
    """An ordered, immutable collection of tools with unique names."""

    __slots__ = ("_by_name", "_indexes", "_tools")

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        listed = tuple(tools)
        by_name: dict[str, Tool] = {}
        for item in listed:
            if not isinstance(item, Tool):
                raise DefinitionError(f"a Toolset holds Tool objects; got {type(item).__name__} (use @toolproof.tool)")
            if item.name in by_name:
                raise DefinitionError(f"duplicate tool name {item.name!r} in one toolset")
            by_name[item.name] = item
        for item in listed:
            if item.fallback is not None:
                target = by_name.get(item.fallback)
                if target is None:
                    raise DefinitionError(f"tool {item.name!r} names an unknown fallback {item.fallback!r}")
        self._tools = listed
        self._by_name = by_name
        self._indexes: dict[tuple[str, str | None], ToolIndex] = {}  # built on first use, one per retriever and fusion

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __repr__(self) -> str:
        return f"Toolset({[t.name for t in self._tools]!r})"

    @property
    def names(self) -> list[str]:
        return [t.name for t in self._tools]

    def get(self, name: str) -> Tool:
        """The tool called `name`, or `UnknownTool` (a protocol error, not a tool result)."""
        try:
            return self._by_name[name]
        except (KeyError, TypeError):
            raise UnknownTool(str(name), self.names) from None

    def select(self, names: Iterable[str]) -> Toolset:
        """A smaller toolset with only the named tools (e.g. the few a retrieval step picked)."""
        return Toolset(self.get(n) for n in names)

    def search(
        self, message: str, k: int = 5, *, retriever: RetrieverName = "default", fusion: Fusion | None = None
    ) -> list[ToolHit]:
        """Up to `k` tools matching `message`, best first (`.tool`, `.score`); needs `toolproof[retrieval]`.

        `retriever`: "default" (BM25 fused with the static model, BM25 alone when that model is missing),
        "bm25", "static", "embeddings", "hybrid" or "auto" (see `ToolIndex`; docs/retrieval.md); `fusion`: how
        "default" and "hybrid" fuse (None: the library's default, docs/retrieval.md). A tool that
        shares nothing with the message is never returned (no common term, no close meaning), so an
        unrelated or empty message gets an empty list. The index is built on the first
        search and kept with this toolset (a toolset is immutable).
        """
        index = self.search_index(retriever, fusion=fusion)
        return [h.as_tool_hit() for h in index.search(message, k)]

    def search_index(self, retriever: RetrieverName = "default", *, fusion: Fusion | None = None) -> ToolIndex:
        """The `ToolIndex` behind `search` (built once per toolset, retriever and fusion)."""
        key = (retriever, fusion)
        index = self._indexes.get(key)
        if index is None:
            try:
                from ..retrieval._hybrid import DEFAULT_FUSION
                from ..retrieval._index import ToolIndex

                index = ToolIndex.from_tools(self._tools, retriever=retriever, fusion=fusion or DEFAULT_FUSION)
            except ImportError as exc:  # a plain `pip install toolproof`: say which extra, in one line
                raise needs_extra("Toolset.search()", exc) from exc
            self._indexes[key] = index
        return index

    def __add__(self, other: Toolset) -> Toolset:
        return Toolset([*self._tools, *other._tools])

    # --- exports --------------------------------------------------------------------------------------------

    def export(self, fmt: ExportFormat) -> list[dict[str, Any]]:
        if fmt == "mcp":
            return self.to_mcp()
        if fmt == "openai":
            return self.to_openai()
        if fmt == "anthropic":
            return self.to_anthropic()
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")

    def to_mcp(self) -> list[dict[str, Any]]:
        return [mcp_definition(t) for t in self._tools]

    def to_openai(self) -> list[dict[str, Any]]:
        return [openai_definition(t) for t in self._tools]

    def to_anthropic(self) -> list[dict[str, Any]]:
        return [anthropic_definition(t) for t in self._tools]


def mcp_definition(tool: Tool) -> dict[str, Any]:
    """An MCP `Tool` (tools/list item): strict `inputSchema`, `outputSchema` of the success envelope."""
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": copy.deepcopy(tool.input_schema),
        "outputSchema": success_envelope_schema(tool.output_schema),
        "annotations": {
            "title": tool.title,
            "readOnlyHint": tool.effect == "read",
            "destructiveHint": tool.effect == "write",
            "idempotentHint": tool.idempotent,
            "openWorldHint": tool.open_world,
        },
    }


def anthropic_definition(tool: Tool) -> dict[str, Any]:
    """An Anthropic Messages API tool (`input_schema`)."""
    return {"name": tool.name, "description": tool.description, "input_schema": copy.deepcopy(tool.input_schema)}


# OpenAI strict mode: every property required, optional ones nullable, objects closed, no defaults.
_OPENAI_DROP: Final = frozenset({"default", "examples", "title", "$schema", "$id"})
_SCHEMA_MAPS: Final = frozenset({"properties", "$defs", "definitions"})


class _NotStrict(Exception):
    pass


def _make_nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "anyOf" in schema:
        if not any(s.get("type") == "null" for s in schema["anyOf"] if isinstance(s, dict)):
            schema["anyOf"] = [*schema["anyOf"], {"type": "null"}]
        return schema
    kind = schema.get("type")
    if isinstance(kind, str) and "$ref" not in schema:
        schema["type"] = [kind, "null"]
        if "enum" in schema and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    if isinstance(kind, list):
        if "null" not in kind:
            schema["type"] = [*kind, "null"]
        if "enum" in schema and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def _openai_strict(node: Any, *, in_map: bool = False) -> Any:
    if isinstance(node, list):
        return [_openai_strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    if in_map:
        return {k: _openai_strict(v) for k, v in node.items()}
    out = {k: _openai_strict(v, in_map=k in _SCHEMA_MAPS) for k, v in node.items() if k not in _OPENAI_DROP}
    is_object = out.get("type") == "object" or "properties" in out
    if is_object:
        extra = out.get("additionalProperties", False)
        if extra is not False:
            raise _NotStrict("an open object (additionalProperties is not false)")
        out["additionalProperties"] = False
        props: dict[str, Any] = out.setdefault("properties", {})
        required = set(out.get("required", []))
        for pname in list(props):
            if pname not in required:
                props[pname] = _make_nullable(props[pname])
        out["required"] = list(props)
    return out


def openai_definition(tool: Tool) -> dict[str, Any]:
    """An OpenAI function tool in strict mode when its schema allows it (open maps cannot be strict)."""
    try:
        params = _openai_strict(copy.deepcopy(tool.input_schema))
        strict = True
    except _NotStrict:
        params = {k: v for k, v in copy.deepcopy(tool.input_schema).items() if k not in _OPENAI_DROP}
        strict = False
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": params,
            "strict": strict,
        },
    }
