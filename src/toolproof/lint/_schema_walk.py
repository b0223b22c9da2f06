"""Walk a tool's input schema: every sub-schema with its JSON pointer and the property name it belongs to."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from ._findings import escape_pointer

MAX_DEPTH: Final = 64  # deeper schemas are cut off, never a RecursionError
JSON_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


@dataclass(slots=True)  # not frozen: a catalogue walks tens of thousands, and a frozen init costs five times more
class Node:
    pointer: str
    name: str | None  # the property name, None for the root, items and combinator branches
    schema: dict[str, Any]
    depth: int  # 0 for the root, 1 for top-level parameters
    required: bool
    types: frozenset[str] = field(init=False)  # `types_of(schema)`, worked out once for every rule
    description: str = field(init=False)  # the schema's `description` when it is a string, else ""

    def __post_init__(self) -> None:
        self.types = types_of(self.schema)
        desc = self.schema.get("description")
        self.description = desc if isinstance(desc, str) else ""


def walk(schema: Any, pointer: str) -> list[Node]:
    """Every sub-schema in document order (a node, then all of its properties', items' ... sub-schemas).
    Iterative: one loop, no generator per level."""
    if not isinstance(schema, dict):
        return []
    out: list[Node] = []
    stack: list[Node] = [Node(pointer, None, schema, 0, True)]
    while stack:
        node = stack.pop()
        out.append(node)
        if node.depth < MAX_DEPTH and not _PARENT_KEYS.isdisjoint(node.schema):  # most nodes are leaves
            stack.extend(reversed(_children(node)))
    return out


#: The keys `_children` descends through.
_PARENT_KEYS: Final = frozenset({"properties", "items", "anyOf", "oneOf", "allOf", "additionalProperties", "$defs",
                                 "definitions"})


def _children(parent: Node) -> list[Node]:
    node, pointer, depth = parent.schema, parent.pointer, parent.depth + 1
    out: list[Node] = []
    props = node.get("properties")
    if isinstance(props, dict):
        req = node.get("required")
        req_set = {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()
        out += [Node(f"{pointer}/properties/{escape_pointer(str(key))}", str(key), child, depth, key in req_set)
                for key, child in props.items() if isinstance(child, dict)]
    items = node.get("items")
    if isinstance(items, dict):
        out.append(Node(f"{pointer}/items", None, items, depth, True))
    elif isinstance(items, list):
        out += [Node(f"{pointer}/items/{i}", None, child, depth, True)
                for i, child in enumerate(items) if isinstance(child, dict)]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            out += [Node(f"{pointer}/{key}/{i}", None, child, depth, True)
                    for i, child in enumerate(branches) if isinstance(child, dict)]
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out.append(Node(f"{pointer}/additionalProperties", None, extra, depth, True))
    for key in ("$defs", "definitions"):
        defs = node.get(key)
        if isinstance(defs, dict):
            out += [Node(f"{pointer}/{key}/{escape_pointer(str(name))}", None, child, depth, True)
                    for name, child in defs.items() if isinstance(child, dict)]
    return out


def types_of(node: dict[str, Any]) -> frozenset[str]:
    """The declared type names (lower case kept as written), including those of anyOf/oneOf branches."""
    kind = node.get("type")
    out: list[str] = []
    if isinstance(kind, str):
        out.append(kind)
    elif isinstance(kind, list):
        out += [k for k in kind if isinstance(k, str)]
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            out += [b["type"] for b in branches if isinstance(b, dict) and isinstance(b.get("type"), str)]
    return _type_set(tuple(out))


@lru_cache(maxsize=1024)
def _type_set(names: tuple[str, ...]) -> frozenset[str]:
    """One set per combination of type names, shared by every node with it: a catalogue has a handful, and
    a set per node is that many more objects for the collector to scan."""
    return frozenset(names)


def is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind in ("object", "dict", "HashMap") or (isinstance(kind, list) and "object" in kind) or (
        "properties" in node and kind is None)
