"""The lock: a reviewed snapshot of tool definitions, in one stable, diff-friendly JSON text.

Everything a caller depends on is in it: each tool's name, description, input and output schema, annotations,
effect, idempotency and examples, its fingerprint (the `schema_version` audit records carry), and the error
contract (its version and its classes). Nothing that varies between runs (no time, no path) is, so the same
tools always give the same bytes and a lock in a repository changes only when a definition does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..catalog._toolset import Toolset, mcp_definition
from ..contract._errors import CONTRACT_VERSION, DefinitionError, ErrorClass
from ..contract._tool import fingerprint

LOCK_FORMAT: Final = "toolproof.lock/1"


@dataclass(frozen=True)
class ToolEntry:
    """One tool as locked. `effect`/`idempotent` are None when the source cannot say (an MCP upstream)."""

    name: str
    description: str = ""
    input_schema: Any = None
    output_schema: Any = None
    annotations: Any = None
    effect: str | None = None
    idempotent: bool | None = None
    examples: Any = None
    version: str = ""

    def __post_init__(self) -> None:
        if not self.version:
            object.__setattr__(self, "version", definition_fingerprint(
                self.name, self.description, self.input_schema, self.output_schema))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "fingerprint": self.version, "description": self.description,
                               "inputSchema": self.input_schema}
        optional = {"outputSchema": self.output_schema, "annotations": self.annotations, "effect": self.effect,
                    "idempotent": self.idempotent, "examples": self.examples}
        out.update({k: v for k, v in optional.items() if v is not None})
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolEntry:
        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise DefinitionError(f"a locked tool has no name: {dict(d)!r:.200}")
        return cls(name=name, description=d.get("description") or "", input_schema=d.get("inputSchema"),
                   output_schema=d.get("outputSchema"), annotations=d.get("annotations"), effect=d.get("effect"),
                   idempotent=d.get("idempotent"), examples=d.get("examples"), version=d.get("fingerprint") or "")


def definition_fingerprint(name: str, description: str, input_schema: Any, output_schema: Any) -> str:
    """The fingerprint of a definition read from outside (MCP, a file), computed as `@tool` computes
    `schema_version`."""
    return fingerprint(name, description, input_schema, output_schema)


@dataclass(frozen=True)
class ErrorContract:
    """The version and the classes of the error envelope callers parse."""

    version: str = CONTRACT_VERSION
    classes: tuple[str, ...] = field(default_factory=lambda: tuple(c.value for c in ErrorClass))


@dataclass(frozen=True)
class Lock:
    """Tools by name, and the error contract. Build with `lock_tools`, `lock_toolset` or `loads_lock`."""

    tools: Mapping[str, ToolEntry]
    errors: ErrorContract = field(default_factory=ErrorContract)


def lock_tools(entries: Iterable[ToolEntry], errors: ErrorContract | None = None) -> Lock:
    """A lock of these tools; two tools with one name are a definition error (a caller could not tell them
    apart)."""
    tools: dict[str, ToolEntry] = {}
    for entry in entries:
        if entry.name in tools:
            raise DefinitionError(f"two tools are named {entry.name!r}: a lock needs unique names")
        tools[entry.name] = entry
    return Lock(tools=dict(sorted(tools.items())), errors=errors or ErrorContract())


def lock_toolset(toolset: Toolset) -> Lock:
    """A toolproof toolset: the MCP definitions it serves, with `schema_version` as each fingerprint."""
    entries = []
    for tool in toolset:
        d = mcp_definition(tool)
        entries.append(ToolEntry(
            name=tool.name, description=tool.description, input_schema=d["inputSchema"],
            output_schema=d["outputSchema"], annotations=d["annotations"], effect=tool.effect,
            idempotent=tool.idempotent, examples=[dict(e) for e in tool.examples] or None,
            version=tool.schema_version))
    return lock_tools(entries)


def entry_from_mcp(d: Mapping[str, Any]) -> ToolEntry:
    """An MCP `tools/list` item (as a dict)."""
    return ToolEntry.from_dict({**d, "fingerprint": ""})


def dumps_lock(lock: Lock) -> str:
    """The lock file's text: sorted keys, two-space indent, one trailing newline; same tools, same bytes."""
    doc = {"lockfile": LOCK_FORMAT,
           "error_contract": {"version": lock.errors.version, "classes": list(lock.errors.classes)},
           "tools": [e.to_dict() for e in lock.tools.values()]}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def is_lock(data: Any) -> bool:
    return isinstance(data, Mapping) and isinstance(data.get("lockfile"), str)


def loads_lock(data: Any) -> Lock:
    """A lock from its parsed JSON; a lock of an unknown format is a clear error, never a guess."""
    if not is_lock(data):
        raise DefinitionError("not a toolproof lock file (no `lockfile` key)")
    if data["lockfile"] != LOCK_FORMAT:
        raise DefinitionError(f"lock format {data['lockfile']!r} is not {LOCK_FORMAT!r}")
    contract = data.get("error_contract") or {}
    errors = ErrorContract(version=str(contract.get("version", "")), classes=tuple(contract.get("classes", ())))
    tools = data.get("tools")
    if not isinstance(tools, list):
        raise DefinitionError("a lock file's `tools` must be a list")
    return lock_tools((ToolEntry.from_dict(t) for t in tools if isinstance(t, Mapping)), errors)
