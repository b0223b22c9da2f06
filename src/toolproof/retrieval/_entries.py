"""`ToolEntry`: what retrieval knows about one tool, from a `Tool` or from a plain MCP/OpenAI/Anthropic definition.

Large sets (thousands of tools imported from MCP servers) are indexed as plain definitions: building a full
`Tool` (with a compiled validator) for each would cost more than the search it serves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..contract._tool import Tool
from ._text import split_identifier

#: What separates the words of an identifier besides case: `get_user`, `get-user`, `users.get`, `users/get`.
_SEPARATORS: Final = re.compile(r"[_\-./]+")


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One searchable tool. `id` is unique in an index; `name` need not be (two servers may both have `search`)."""

    id: str
    name: str
    description: str = ""
    parameters: tuple[tuple[str, str], ...] = ()
    group: str | None = None
    requires: tuple[str, ...] = ()
    tool: Tool | None = field(default=None, compare=False, repr=False)

    def text(self) -> str:
        """The text BM25 and the embedding model see: name, group, description, parameter names and descriptions."""
        params = " ".join(f"{name} {desc}" for name, desc in self.parameters)
        group = f"{self.group} " if self.group else ""
        return f"{self.name} {self.name} {group}{self.description} {params}".strip()

    def short_text(self) -> str:
        """Name and description only: what an embedding model sees best (its window is 256 word pieces).

        The name is split into words as BM25 splits it (`DeleteReminder` -> `Delete Reminder`,
        `sculpture_price.calculate` -> `sculpture price calculate`): a word-piece vocabulary cuts a glued
        identifier into fragments (`del ##eter ##emi ##nder`) whose vectors mean nothing.
        """
        name = _SEPARATORS.sub(" ", split_identifier(self.name)).strip()
        if not self.description:
            return name
        return f"{name}: {self.description}" if name else self.description


def parameters_of(schema: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """Top-level parameter names with their descriptions from a JSON Schema (tolerates junk)."""
    if not isinstance(schema, Mapping):
        return ()
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return ()
    out: list[tuple[str, str]] = []
    for name, sub in props.items():
        desc = sub.get("description", "") if isinstance(sub, Mapping) else ""
        out.append((str(name), desc if isinstance(desc, str) else ""))
    return tuple(out)


def entry_from_tool(tool: Tool, *, id: str | None = None, requires: Iterable[str] = ()) -> ToolEntry:
    return ToolEntry(
        id=id or tool.name,
        name=tool.name,
        description=tool.description or "",
        parameters=parameters_of(tool.input_schema),
        group=tool.group,
        requires=tuple(requires),
        tool=tool,
    )


def entry_from_definition(
    definition: Mapping[str, Any], *, group: str | None = None, id: str | None = None, requires: Iterable[str] = ()
) -> ToolEntry:
    """An entry from an MCP `tools/list` item, an OpenAI function tool or an Anthropic tool definition."""
    body: Mapping[str, Any] = definition
    if isinstance(definition.get("function"), Mapping):  # OpenAI {"type": "function", "function": {...}}
        body = definition["function"]
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"a tool definition needs a non-empty string 'name'; got {name!r}")
    schema = body.get("inputSchema") or body.get("input_schema") or body.get("parameters")
    description = body.get("description") or ""
    if not isinstance(description, str):
        description = str(description)
    return ToolEntry(
        id=id or (f"{group}::{name}" if group else name),
        name=name,
        description=description,
        parameters=parameters_of(schema),
        group=group,
        requires=tuple(requires),
    )
