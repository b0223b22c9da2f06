"""Walk a tool's input schema: every sub-schema with its JSON pointer and the property name it belongs to."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from .findings import escape_pointer

MAX_DEPTH: Final = 64  # deeper schemas are cut off, never a RecursionError
JSON_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


@dataclass(frozen=True, slots=True)
class Node:
    pointer: str
    name: str | None  # the property name, None for the root, items and combinator branches
    schema: dict[str, Any]
    depth: int  # 0 for the root, 1 for top-level parameters
    required: bool


def walk(schema: Any, pointer: str) -> Iterator[Node]:
    if isinstance(schema, dict):
        yield from _walk(schema, pointer, None, 0, True)


def _walk(node: dict[str, Any], pointer: str, name: str | None, depth: int, required: bool) -> Iterator[Node]:
    yield Node(pointer, name, node, depth, required)
    if depth >= MAX_DEPTH:
        return
    props = node.get("properties")
    if isinstance(props, dict):
        req = node.get("required")
        req_set = {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()
        for key, child in props.items():
            if isinstance(child, dict):
                yield from _walk(child, f"{pointer}/properties/{escape_pointer(str(key))}", str(key), depth + 1,
                                 key in req_set)
    items = node.get("items")
    if isinstance(items, dict):
        yield from _walk(items, f"{pointer}/items", None, depth + 1, True)
    elif isinstance(items, list):
        for i, child in enumerate(items):
            if isinstance(child, dict):
                yield from _walk(child, f"{pointer}/items/{i}", None, depth + 1, True)
    for key in ("anyOf", "oneOf", "allOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            for i, child in enumerate(branches):
                if isinstance(child, dict):
                    yield from _walk(child, f"{pointer}/{key}/{i}", None, depth + 1, True)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _walk(extra, f"{pointer}/additionalProperties", None, depth + 1, True)
    for key in ("$defs", "definitions"):
        defs = node.get(key)
        if isinstance(defs, dict):
            for dname, child in defs.items():
                if isinstance(child, dict):
                    yield from _walk(child, f"{pointer}/{key}/{escape_pointer(str(dname))}", None, depth + 1, True)


def types_of(node: dict[str, Any]) -> set[str]:
    """The declared type names (lower case kept as written), including those of anyOf/oneOf branches."""
    kind = node.get("type")
    out: set[str] = set()
    if isinstance(kind, str):
        out.add(kind)
    elif isinstance(kind, list):
        out.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            for b in branches:
                if isinstance(b, dict) and isinstance(b.get("type"), str):
                    out.add(b["type"])
    return out


def is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind in ("object", "dict", "HashMap") or (isinstance(kind, list) and "object" in kind) or (
        "properties" in node and kind is None)
