"""`ToolDef`: one tool definition read from any format, with the pointers back into what was read.

Rules see only this, so one engine serves Python toolsets, JSON files and live MCP servers alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, TypeVar, overload

from ._schema_walk import Node, walk
from ._text import cjk_chars, content_words, folded, text_words

_T = TypeVar("_T")

ToolFormat = Literal["mcp", "openai", "anthropic", "bfcl", "docker"]


@dataclass(frozen=True)
class ToolDef:
    """A tool definition as the model would see it, plus facts only the code knows (effect, idempotency).

    `schema_pointer` is where the input schema lives in the original (`/inputSchema`, `/function/parameters`,
    `/input_schema`, `/parameters`); `base_pointer` prefixes every pointer (empty for one tool per record).
    `effect` and `idempotent` are None when the format cannot say (only Python tools and annotations can).
    `relisted_names` is the tool-name order of a second `tools/list` of the same server (`relisted`), None
    when the server was listed once or the tools came from code or a file.
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
    relisted_names: tuple[str, ...] | None = field(default=None, compare=False, repr=False)
    raw: Any = field(default=None, compare=False, repr=False)

    @cached_property
    def label(self) -> str:
        return self.name if isinstance(self.name, str) else repr(self.name)

    @cached_property
    def description_text(self) -> str:
        return self.description if isinstance(self.description, str) else ""

    @property
    def schema(self) -> dict[str, Any]:
        return self.input_schema if isinstance(self.input_schema, dict) else {}

    @cached_property
    def description_words(self) -> tuple[str, ...]:
        """The description's words in lower case, split once for every rule that reads them."""
        return tuple(text_words(self.description_text))

    @cached_property
    def description_content(self) -> tuple[str, ...]:
        """The description's words that carry meaning (`text.content_words`), for both look-alike passes."""
        return tuple(content_words(self.description_words))

    @cached_property
    def description_folded(self) -> str:
        """The description in lower case for the rules' phrase patterns (`text.folded`)."""
        return folded(self.description_text)

    @cached_property
    def description_cjk(self) -> int:
        """Chinese, Japanese and Korean characters in the description (rules judging English words skip them)."""
        return cjk_chars(self.description_text)

    @cached_property
    def nodes(self) -> tuple[Node, ...]:
        """Every sub-schema of the input schema, walked once and shared by all parameter rules."""
        return tuple(walk(self.input_schema, self.schema_pointer))

    @cached_property
    def params(self) -> tuple[Node, ...]:
        """The named properties at any depth (the nodes most parameter rules look at)."""
        return tuple(n for n in self.nodes if n.name is not None)

    @property
    def properties(self) -> dict[str, Any]:
        props = self.schema.get("properties")
        return props if isinstance(props, dict) else {}


class ToolGroup(Sequence[ToolDef]):
    """The tools a toolset rule sees at once, and what several rules derive from all of them together:
    computed by the first rule that asks, kept for the others of the same run (the look-alike pairs feed
    both TP402 and TP405)."""

    __slots__ = ("_derived", "_tools")

    def __init__(self, tools: Iterable[ToolDef]) -> None:
        self._tools = tuple(tools)
        self._derived: dict[str, tuple[object, Any]] = {}

    @classmethod
    def of(cls, tools: Sequence[ToolDef]) -> ToolGroup:
        return tools if isinstance(tools, ToolGroup) else cls(tools)

    def derived(self, name: str, config: object, compute: Callable[[], _T]) -> _T:
        """`compute()` once per name under one configuration (the same object: one lint run)."""
        hit = self._derived.get(name)
        if hit is None or hit[0] is not config:
            hit = self._derived[name] = (config, compute())
        value: _T = hit[1]
        return value

    def __len__(self) -> int:
        return len(self._tools)

    @overload
    def __getitem__(self, index: int) -> ToolDef: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ToolDef]: ...
    def __getitem__(self, index: int | slice) -> ToolDef | Sequence[ToolDef]:
        return self._tools[index]

    def __iter__(self) -> Iterator[ToolDef]:
        return iter(self._tools)
