"""The arguments a scenario sends: given on the command line, else the tool's first example, else the
smallest valid call its schema describes; and the same call with one argument changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any

__all__ = ["arguments_for", "changed"]


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
