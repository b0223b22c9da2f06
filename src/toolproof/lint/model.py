"""`ToolDef`: one tool definition read from any format, with the pointers back into what was read.

Rules see only this, so one engine serves Python toolsets, JSON files and live MCP servers alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from .schema_walk import Node, walk

ToolFormat = Literal["mcp", "openai", "anthropic", "bfcl", "docker"]


@dataclass(frozen=True)
class ToolDef:
    """A tool definition as the model would see it, plus facts only the code knows (effect, idempotency).

    `schema_pointer` is where the input schema lives in the original (`/inputSchema`, `/function/parameters`,
    `/input_schema`, `/parameters`); `base_pointer` prefixes every pointer (empty for one tool per record).
    `effect` and `idempotent` are None when the format cannot say (only Python tools and annotations can).
    """

    name: Any
    description: Any
    input_schema: Any
    format: ToolFormat = "mcp"
    output_schema: Any = None
    annotations: Any = None
    has_annotations_field: bool = False
    examples: Any = None
    effect: Literal["read", "write"] | None = None
    idempotent: bool | None = None
    source: str = ""
    toolset: str = ""
    schema_pointer: str = "/inputSchema"
    name_pointer: str = "/name"
    description_pointer: str = "/description"
    schema_synthesized: bool = False  # built from a format with no JSON Schema (Docker registry `arguments`)
    raw: Any = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        return self.name if isinstance(self.name, str) else repr(self.name)

    @property
    def description_text(self) -> str:
        return self.description if isinstance(self.description, str) else ""

    @property
    def schema(self) -> dict[str, Any]:
        return self.input_schema if isinstance(self.input_schema, dict) else {}

    @cached_property
    def nodes(self) -> tuple[Node, ...]:
        """Every sub-schema of the input schema, walked once and shared by all parameter rules."""
        return tuple(walk(self.input_schema, self.schema_pointer))

    @property
    def properties(self) -> dict[str, Any]:
        props = self.schema.get("properties")
        return props if isinstance(props, dict) else {}
