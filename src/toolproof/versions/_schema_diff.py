"""Walk two JSON Schemas side by side and name every change by its kind (see `rules.RULES`).

Kinds say what a change does to the set of values a schema accepts (widened, narrowed, changed), never
whether that is safe: `rules.classify` decides that per part (input, output). Keys are compared as sets and
values by canonical JSON, so key order never makes a change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..contract._canonical import canonical_json
from ..contract._errors import InvalidArgument

#: Text the model reads: a change is behavioural.
_TEXT: Final = {"description": "description-changed", "title": "title-changed", "examples": "examples-changed",
                "default": "default-changed"}
_IGNORED: Final = frozenset({"$comment", "$schema", "$id", "deprecated", "readOnly", "writeOnly"})
#: Lower bounds (a larger value narrows) and upper bounds (a smaller value narrows).
_LOWER: Final = frozenset({"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties",
                           "minContains"})
_UPPER: Final = frozenset({"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties",
                           "maxContains"})
_OPAQUE: Final = frozenset({"pattern", "format", "multipleOf", "contentEncoding", "contentMediaType"})
_SUBSCHEMA_LISTS: Final = ("anyOf", "oneOf", "allOf", "prefixItems")


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """One change at `pointer` (RFC 6901, relative to the schema's own pointer)."""

    kind: str
    pointer: str
    old: Any = None
    new: Any = None


def _esc(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _same(a: Any, b: Any) -> bool:
    try:
        return canonical_json(a) == canonical_json(b)
    except InvalidArgument:  # a value canonical JSON refuses (NaN): compare as Python does
        return bool(a == b)


def schema_changes(old: Any, new: Any, pointer: str = "") -> Iterator[SchemaChange]:
    """Every change from `old` to `new`; nothing when they are the same JSON value."""
    if _same(old, new):
        return
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        yield SchemaChange("schema-changed", pointer, old, new)
        return
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if key in _IGNORED or _same(a, b) or key in ("required", "additionalProperties"):
            continue
        where = f"{pointer}/{_esc(key)}"
        if key in _TEXT:
            yield SchemaChange(_TEXT[key], where, a, b)
        elif key == "type":
            yield from _type_change(a, b, where)
        elif key in ("enum", "const"):
            yield from _enum_change(old, new, pointer, key)
        elif key in _LOWER or key in _UPPER:
            yield _bound_change(key, a, b, where)
        elif key in _OPAQUE or key == "uniqueItems":
            kind = "range-narrowed" if a in (None, False) else "range-widened" if b in (None, False) \
                else "constraint-changed"
            yield SchemaChange(kind, where, a, b)
        elif key == "properties":
            yield from _property_changes(old, new, pointer)
        elif key in ("items", "$defs", "definitions") and isinstance(a, Mapping) and isinstance(b, Mapping):
            yield from (schema_changes(a, b, where) if key == "items" else _map_changes(a, b, where))
        elif key in _SUBSCHEMA_LISTS and isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                yield from schema_changes(x, y, f"{where}/{i}")
        else:
            yield SchemaChange("schema-changed", where, a, b)
    yield from _closure_change(old, new, pointer)
    yield from _required_changes(old, new, pointer)


def _types(value: Any) -> set[str] | None:
    if value is None:
        return None
    types = {value} if isinstance(value, str) else {str(t) for t in value} if isinstance(value, list) else set()
    return types | {"integer"} if "number" in types else types


def _type_change(a: Any, b: Any, where: str) -> Iterator[SchemaChange]:
    old, new = _types(a), _types(b)
    if old == new:
        return
    if new is None or (old is not None and old < new):
        yield SchemaChange("type-widened", where, a, b)
    elif old is None or new < old:
        yield SchemaChange("type-narrowed", where, a, b)
    else:
        yield SchemaChange("type-changed", where, a, b)


def _values(schema: Mapping[str, Any]) -> set[str] | None:
    """The allowed values of `enum` and `const` together, as canonical JSON; None when any value goes."""
    allowed: set[str] | None = None
    if isinstance(schema.get("enum"), list):
        allowed = {canonical_json(v) for v in schema["enum"]}
    if "const" in schema:
        const = {canonical_json(schema["const"])}
        allowed = const if allowed is None else allowed & const
    return allowed


def _enum_change(old: Mapping[str, Any], new: Mapping[str, Any], pointer: str, key: str) -> Iterator[SchemaChange]:
    """`enum` and `const` are judged together, once: at the first of them that differs."""
    if key != next(k for k in ("const", "enum") if not _same(old.get(k), new.get(k))):
        return
    a, b = _values(old), _values(new)
    where = f"{pointer}/{key}"
    if a == b:
        return
    if b is None or (a is not None and a < b):
        kind = "enum-widened"
    elif a is None or b < a:
        kind = "enum-narrowed"
    else:
        kind = "enum-changed"
    yield SchemaChange(kind, where, _decoded(a), _decoded(b))


def _decoded(values: set[str] | None) -> list[Any] | None:
    return None if values is None else [json.loads(v) for v in sorted(values)]


def _bound_change(key: str, a: Any, b: Any, where: str) -> SchemaChange:
    if a is None or b is None:
        return SchemaChange("range-narrowed" if a is None else "range-widened", where, a, b)
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return SchemaChange("schema-changed", where, a, b)
    looser = b < a if key in _LOWER else b > a
    return SchemaChange("range-widened" if looser else "range-narrowed", where, a, b)


def _props(schema: Mapping[str, Any]) -> dict[str, Any]:
    props = schema.get("properties")
    return dict(props) if isinstance(props, Mapping) else {}


def _required(schema: Mapping[str, Any]) -> set[str]:
    req = schema.get("required")
    return {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()


def _shape(schema: Any) -> str:
    """A property's schema without its text: what a rename keeps."""
    if not isinstance(schema, Mapping):
        return canonical_json(schema)
    return canonical_json({k: v for k, v in schema.items() if k not in _TEXT})


def _property_changes(old: Mapping[str, Any], new: Mapping[str, Any], pointer: str) -> Iterator[SchemaChange]:
    a, b = _props(old), _props(new)
    req_a, req_b = _required(old), _required(new)
    removed = [k for k in sorted(a) if k not in b]
    added = [k for k in sorted(b) if k not in a]
    base = f"{pointer}/properties"
    renamed: set[str] = set()
    for gone in removed:
        twin = next((k for k in added if k not in renamed and _shape(b[k]) == _shape(a[gone])
                     and (gone in req_a) == (k in req_b)), None)
        if twin is not None:
            renamed.add(twin)
            yield SchemaChange("field-renamed", f"{base}/{_esc(gone)}", gone, twin)
        else:
            kind = "field-removed-required" if gone in req_a else "field-removed"
            yield SchemaChange(kind, f"{base}/{_esc(gone)}", a[gone], None)
    for new_key in added:
        if new_key not in renamed:
            kind = "field-added-required" if new_key in req_b else "field-added-optional"
            yield SchemaChange(kind, f"{base}/{_esc(new_key)}", None, b[new_key])
    for key in sorted(set(a) & set(b)):
        yield from schema_changes(a[key], b[key], f"{base}/{_esc(key)}")


def _required_changes(old: Mapping[str, Any], new: Mapping[str, Any], pointer: str) -> Iterator[SchemaChange]:
    """A field kept in both schemas that became required or optional (added and removed ones are named above)."""
    kept = set(_props(old)) & set(_props(new))
    req_a, req_b = _required(old), _required(new)
    for name in sorted(kept & (req_a ^ req_b)):
        kind = "field-now-required" if name in req_b else "field-now-optional"
        yield SchemaChange(kind, f"{pointer}/properties/{_esc(name)}", name in req_a, name in req_b)


def _closure_change(old: Mapping[str, Any], new: Mapping[str, Any], pointer: str) -> Iterator[SchemaChange]:
    """`additionalProperties`: absent or true accepts any extra field, false none, a schema some."""
    a, b = old.get("additionalProperties", True), new.get("additionalProperties", True)
    if _same(a, b):
        return
    where = f"{pointer}/additionalProperties"
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        yield from schema_changes(a, b, where)
    elif b is True or a is False:
        yield SchemaChange("range-widened", where, a, b)
    elif b is False or a is True:
        yield SchemaChange("range-narrowed", where, a, b)
    else:
        yield SchemaChange("schema-changed", where, a, b)


def _map_changes(a: Mapping[str, Any], b: Mapping[str, Any], where: str) -> Iterator[SchemaChange]:
    """`$defs`: a definition added or dropped changes nothing by itself (a `$ref` to it would); shared ones are
    compared."""
    for key in sorted(set(a) & set(b)):
        yield from schema_changes(a[key], b[key], f"{where}/{_esc(key)}")
