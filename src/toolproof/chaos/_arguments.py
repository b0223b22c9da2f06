"""The arguments a scenario sends: given on the command line, else the tool's first example, else the
smallest valid call its schema describes; and the same call with one argument changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any

__all__ = ["arguments_for", "changed", "sample"]


def arguments_for(schema: Mapping[str, Any], examples: Sequence[Mapping[str, Any]] = (),
                  given: dict[str, Any] | None = None) -> dict[str, Any]:
    if given is not None:
        return dict(given)
    if examples:
        return dict(examples[0])
    props: dict[str, Any] = schema.get("properties", {})
    return {name: _value(props.get(name, {})) for name in schema.get("required", [])}


def changed(schema: Mapping[str, Any], args: dict[str, Any],
            operation_keys: Sequence[str] | None = None) -> tuple[str, dict[str, Any]] | None:
    """One argument changed, and which: an amount first, never one of the tool's operation keys or an id (those
    name the operation: other values are another operation, not a repeat); None when no argument is left."""
    props: dict[str, Any] = schema.get("properties", {})
    keys = set(operation_keys or ())
    free = [n for n in args if n not in keys and n != "id" and not n.endswith("_id")]  # an id names the thing
    for name in sorted(free, key=lambda n: not isinstance(args[n], int | float) or isinstance(args[n], bool)):
        other = _other(props.get(name, {}), args[name])
        if other is not None:
            return name, {**args, name: other}
    return None


def sample(schema: Mapping[str, Any]) -> Any:
    """The smallest value a JSON schema allows (required fields only, `$ref`s into its `$defs` followed): the
    answer a tool that did nothing pretends with."""
    defs: dict[str, Any] = dict(schema.get("$defs", {}))

    def walk(node: Mapping[str, Any]) -> Any:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return walk(defs.get(ref.removeprefix("#/$defs/"), {}))
        for many in ("anyOf", "oneOf", "allOf"):
            if node.get(many):
                return walk(node[many][0])
        if node.get("type") == "object" or "properties" in node:
            props: dict[str, Any] = node.get("properties", {})
            return {name: walk(props.get(name, {})) for name in node.get("required", [])}
        if node.get("type") == "array" and node.get("minItems"):
            return [walk(node.get("items", {})) for _ in range(int(node["minItems"]))]
        return _value(dict(node))

    return walk(schema)


def _value(schema: dict[str, Any]) -> Any:
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if kind in ("integer", "number"):
        return schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if kind == "string":
        return (date.today() + timedelta(days=7)).isoformat() if schema.get("format") == "date" else "chaos"
    if kind == "array":
        return []
    return {}


def _other(schema: dict[str, Any], value: Any) -> Any:
    if "enum" in schema:
        rest = [v for v in schema["enum"] if v != value]
        return rest[0] if rest else None
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        top = schema.get("maximum")
        return value - 1 if top is not None and value + 1 > top else value + 1
    if isinstance(value, str):
        return value + "-changed"
    return None
