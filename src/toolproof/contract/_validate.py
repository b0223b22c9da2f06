"""Argument validation before any side effect: limits first, then the compiled JSON Schema validator.

Every failure becomes an `InvalidArgument` naming the field, the value received (truncated), the allowed
values for enums, the unexpected property for closed objects, and a hint that states the constraint.
Hostile input (huge, deeply nested, non-JSON values) is refused by the limits, never a crash or a hang.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import jsonschema_rs

from ._errors import InvalidArgument
from ._plain import NotPlainJson, plain_json

_RECEIVED_MAX_CHARS: Final = 200
_SCALARS: Final = (str, int, float, bool, type(None))


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on arguments, checked before the schema so that hostile input costs little."""

    max_json_bytes: int = 1_000_000
    max_depth: int = 32
    max_string_chars: int = 100_000
    max_items: int = 100_000


DEFAULT_LIMITS: Final = Limits()


def truncate_value(value: Any, limit: int = _RECEIVED_MAX_CHARS) -> Any:
    """A value fit to echo back to the model: small values as they are, large ones as truncated text."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    if isinstance(value, bool | int | type(None)):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
            text = str(value) if value.bit_length() < 10_000 else "<a very large integer>"
            return truncate_value(text, limit)
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    try:
        text = json.dumps(value, ensure_ascii=False, default=lambda o: f"<{type(o).__name__}>")
    except (ValueError, RecursionError, TypeError):
        return f"<{type(value).__name__}>"
    if len(text) <= limit:
        return value
    return text[:limit] + "…"


def _reject(code: str, message: str, hint: str, *, field: str | None = None, received: Any = None) -> InvalidArgument:
    return InvalidArgument(message, code=code, field=field, received=received, hint=hint)


def _path_text(path: list[Any] | tuple[Any, ...]) -> str | None:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or None


def _check_limits(args: Mapping[str, Any], limits: Limits) -> None:
    """Walk the arguments iteratively (no recursion) and refuse what breaks a limit or is not JSON."""
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(args, 1, ())]
    items = 0
    while stack:
        value, depth, path = stack.pop()
        if depth > limits.max_depth:
            raise _reject(
                "TOO_DEEP",
                f"Arguments are nested deeper than {limits.max_depth} levels.",
                f"Flatten the value; at most {limits.max_depth} levels of nesting are accepted.",
                field=_path_text(path),
            )
        if isinstance(value, Mapping):
            pairs: Any = value.items()
        elif isinstance(value, list | tuple):
            pairs = enumerate(value)
        else:
            pairs = ()
        for key, item in pairs:
            items += 1
            if items > limits.max_items:
                raise _reject(
                    "TOO_MANY_ITEMS",
                    f"Arguments hold more than {limits.max_items} values.",
                    "Send fewer values in one call.",
                )
            if isinstance(value, Mapping) and not isinstance(key, str):
                raise _reject(
                    "NOT_JSON",
                    "An object key is not a string.",
                    "Use JSON objects with string keys.",
                    field=_path_text(path),
                    received=truncate_value(key),
                )
            _check_scalar(item, limits, (*path, key))
            if isinstance(item, Mapping | list | tuple):
                stack.append((item, depth + 1, (*path, key)))


def _check_scalar(item: Any, limits: Limits, path: tuple[Any, ...]) -> None:
    kind = type(item)
    if kind is str:
        if len(item) > limits.max_string_chars:
            raise _reject(
                "STRING_TOO_LONG",
                f"A text value is longer than {limits.max_string_chars} characters.",
                f"Send at most {limits.max_string_chars} characters.",
                field=_path_text(path),
                received=truncate_value(item),
            )
    elif kind is float:
        if not math.isfinite(item):
            raise _reject(
                "NOT_JSON",
                "A number is NaN or infinite, which JSON cannot carry.",
                "Send a finite number.",
                field=_path_text(path),
                received=str(item),
            )
    elif not isinstance(item, (*_SCALARS, Mapping, list, tuple, numbers.Real)) and not _is_numpy_scalar(item):
        raise _reject(
            "NOT_JSON",
            f"A value of type {type(item).__name__} is not JSON.",
            "Send only JSON values: objects, arrays, strings, numbers, booleans and null.",
            field=_path_text(path),
            received=f"<{type(item).__name__}>",
        )


def _plain_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """Arguments as plain JSON types (a `str` subclass, `numpy.float64`, an `IntEnum` become str, float, int),
    so a handler gets the types it declares; text with a lone surrogate is refused, never altered."""
    try:
        plain: dict[str, Any] = plain_json(args, surrogates="refuse", copy=True)  # the handler's own copy
    except NotPlainJson as exc:
        raise _reject(
            "NOT_JSON",
            f"The arguments hold {exc.what}.",
            "Send only JSON values: objects, arrays, Unicode strings, finite numbers, booleans and null.",
            field=_path_text(exc.path),
        ) from None
    return plain


def _is_numpy_scalar(item: Any) -> bool:
    """`numpy.bool_` and `numpy.int64` are not Python scalars, but they are JSON values (`plain_json` says which)."""
    return type(item).__module__ == "numpy" and hasattr(item, "item")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class ArgumentValidator:
    """A JSON Schema compiled once per tool; `parse` turns raw model output into checked arguments."""

    __slots__ = ("_is_valid", "_limits", "_optional", "_schema", "_validator")

    def __init__(
        self, schema: Mapping[str, Any], limits: Limits = DEFAULT_LIMITS, *, optional: frozenset[str] = frozenset()
    ) -> None:
        self._schema = dict(schema)
        self._limits = limits
        self._optional = optional  # the parameters a top-level null may leave out
        self._validator = jsonschema_rs.validator_for(self._schema, validate_formats=True)
        self._is_valid = self._validator.is_valid

    @property
    def schema(self) -> dict[str, Any]:
        return self._schema

    def parse(self, arguments: Any) -> dict[str, Any]:
        """Checked arguments as a dict, or `InvalidArgument`. Accepts a dict or the JSON text a model emits.

        A top-level null for an optional parameter means "not given" (OpenAI strict mode sends nulls).
        """
        if type(arguments) is dict:
            args = arguments.copy()  # a snapshot: the caller may reuse its dict; the audit trail must not change
        elif arguments is None:
            args = {}
        elif isinstance(arguments, str | bytes | bytearray):
            args = self._parse_text(arguments)
        elif isinstance(arguments, Mapping):
            args = dict(arguments)
        else:
            raise _reject(
                "ARGUMENTS_NOT_OBJECT",
                f"Arguments must be a JSON object, not {_json_type(arguments)}.",
                "Send the arguments as one JSON object with the tool's parameter names as keys.",
                received=truncate_value(arguments),
            )
        optional = self._optional
        for name in optional:  # not `None in args.values()`: each == against a str costs 0.1 µs
            if args.get(name, 0) is None:
                args = {k: v for k, v in args.items() if not (v is None and k in optional)}
                break
        # Fast path: flat arguments of short strings and plain numbers need no walk.
        limits = self._limits
        for key, value in args.items():
            kind = type(value)
            if type(key) is str and key.isascii() and (
                (kind is str and len(value) <= limits.max_string_chars and value.isascii())
                or kind in _FLAT_OK
                or (kind is float and value - value == 0)  # finite
            ):
                continue
            _check_limits(args, limits)
            args = _plain_arguments(args)
            break
        try:
            if self._is_valid(args):
                return args
        except ValueError:  # pragma: no cover - plain arguments are always representable
            raise _reject("NOT_JSON", "The arguments are not JSON values.", "Send only JSON values.") from None
        raise self._explain(args)

    def _parse_text(self, text: str | bytes | bytearray) -> dict[str, Any]:
        if len(text) > self._limits.max_json_bytes:
            raise _reject(
                "ARGUMENTS_TOO_LARGE",
                f"The arguments are larger than {self._limits.max_json_bytes} bytes.",
                "Send a smaller value.",
            )
        try:
            parsed = json.loads(text, parse_constant=_reject_constant)
        except RecursionError:
            raise _reject(
                "TOO_DEEP",
                "The arguments are nested too deeply to read.",
                f"Flatten the value; at most {self._limits.max_depth} levels of nesting are accepted.",
            ) from None
        except (ValueError, UnicodeDecodeError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not valid JSON text"
            raise _reject(
                "INVALID_JSON",
                f"The arguments are not valid JSON ({reason}).",
                "Send the arguments as one JSON object, e.g. {\"name\": \"value\"}.",
                received=truncate_value(text if isinstance(text, str) else text.decode("utf-8", "replace")),
            ) from None
        if not isinstance(parsed, dict):
            raise _reject(
                "ARGUMENTS_NOT_OBJECT",
                f"Arguments must be a JSON object, not {_json_type(parsed)}.",
                "Send the arguments as one JSON object with the tool's parameter names as keys.",
                received=truncate_value(parsed),
            )
        return parsed

    def _explain(self, args: dict[str, Any]) -> InvalidArgument:
        try:
            errors = list(self._validator.iter_errors(args))
        except ValueError:
            # Not representable for the validator (should have been caught by the limits walk).
            _check_limits(args, self._limits)
            return _reject("NOT_JSON", "The arguments are not JSON values.", "Send only JSON values.")
        if not errors:  # pragma: no cover - is_valid and iter_errors disagree
            return _reject("INVALID_ARGUMENT", "The arguments do not match the schema.", "Check the schema.")
        errors.sort(key=_error_rank)
        first = _describe(errors[0], self._schema)
        if len(errors) > 1:
            others = "; ".join(_describe(e, self._schema).message.rstrip(".") for e in errors[1:4])
            more = f" (+{len(errors) - 4} more)" if len(errors) > 4 else ""
            first.message = f"{first.message} Also: {others}{more}."
        return first


_FLAT_OK: Final = frozenset({int, bool, type(None)})

_KIND_RANK: Final = {"AdditionalProperties": 0, "Required": 1, "Type": 2, "Enum": 3, "Constant": 3}


def _error_rank(error: Any) -> tuple[int, int]:
    return (_KIND_RANK.get(type(error.kind).__name__, 5), len(error.instance_path))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"


def _subschema(schema: Mapping[str, Any], path: list[Any]) -> Mapping[str, Any]:
    node: Any = schema
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return {}
        if isinstance(node, Mapping) and "$ref" in node and isinstance(node["$ref"], str):
            ref = node["$ref"]
            if ref.startswith("#/"):
                target: Any = schema
                for seg in ref[2:].split("/"):
                    target = target.get(seg, {}) if isinstance(target, Mapping) else {}
                node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node if isinstance(node, Mapping) else {}


def _describe(error: Any, schema: Mapping[str, Any]) -> InvalidArgument:
    kind = error.kind
    kname = type(kind).__name__
    path = list(error.instance_path)
    field = _path_text(path)
    received = truncate_value(error.instance)
    field_schema = _subschema(schema, list(error.schema_path)[:-1])
    described = field_schema.get("description")
    tail = f" ({described})" if isinstance(described, str) and described else ""
    label = field or "the arguments"
    allowed: list[Any] | None = None
    if kname == "AdditionalProperties":
        unexpected = list(kind.unexpected)
        name = unexpected[0] if unexpected else "?"
        known = sorted(field_schema.get("properties", {}))
        field = _path_text([*path, name])
        received = truncate_value(error.instance.get(name)) if isinstance(error.instance, dict) else None
        message = f"Unexpected field {name!r}" + (f" at {_path_text(path)}" if path else "") + "."
        hint = f"Remove {name!r}. Allowed fields: {', '.join(known) or 'none'}."
        code = "UNEXPECTED_FIELD"
    elif kname == "Required":
        name = kind.property
        field = _path_text([*path, name])
        prop = _subschema(field_schema, ["properties", name])
        pdesc = prop.get("description")
        message = f"Missing required field {name!r}."
        hint = f"Add {name!r}" + (f": {pdesc}" if isinstance(pdesc, str) and pdesc else ".")
        code = "MISSING_FIELD"
        received = None
    elif kname == "Enum":
        allowed = list(kind.options)
        message = f"{label} is {received!r}, which is not allowed."
        hint = f"Use one of: {', '.join(map(str, allowed))}.{tail}"
        code = "NOT_IN_ENUM"
    elif kname == "Constant":
        allowed = [kind.expected_value] if hasattr(kind, "expected_value") else None
        message = f"{label} must be a fixed value."
        hint = f"Use {allowed[0]!r}." if allowed else "Use the fixed value the schema states."
        code = "NOT_CONSTANT"
    elif kname == "Type":
        types = kind.types if hasattr(kind, "types") else []
        wanted = " or ".join(str(t) for t in types) or "another type"
        message = f"{label} is {_json_type(error.instance)}, expected {wanted}."
        hint = f"Send {label} as {wanted}, without quotes for numbers.{tail}"
        code = "WRONG_TYPE"
    elif kname in ("Minimum", "Maximum", "ExclusiveMinimum", "ExclusiveMaximum"):
        limit = kind.limit
        word = {"Minimum": "at least", "Maximum": "at most", "ExclusiveMinimum": "more than",
                "ExclusiveMaximum": "less than"}[kname]
        message = f"{label} is {received!r}; it must be {word} {limit}."
        hint = f"Send a value {word} {limit}.{tail}"
        code = "OUT_OF_RANGE"
    elif kname == "Format":
        fmt = kind.format
        example = {"date": "2026-10-23", "date-time": "2026-10-23T09:30:00Z", "time": "09:30:00Z"}.get(fmt)
        message = f"{label} is not a valid {fmt}."
        hint = f"Use the {fmt} format" + (f", e.g. {example}." if example else ".") + tail
        code = "BAD_FORMAT"
    elif kname in ("MinLength", "MaxLength", "MinItems", "MaxItems", "MinProperties", "MaxProperties"):
        limit = getattr(kind, "limit", None)
        what = "characters" if "Length" in kname else ("items" if "Items" in kname else "fields")
        word = "at least" if kname.startswith("Min") else "at most"
        message = f"{label} must have {word} {limit} {what}."
        hint = f"Send {word} {limit} {what}.{tail}"
        code = "BAD_SIZE"
    elif kname == "Pattern":
        pattern = getattr(kind, "pattern", None)
        message = f"{label} does not match the expected pattern."
        hint = f"Match the pattern {pattern}.{tail}" if pattern else f"Match the expected pattern.{tail}"
        code = "BAD_PATTERN"
    else:
        message = f"{label}: {error.message}"
        hint = f"Correct {label} to match the schema.{tail}"
        code = "SCHEMA_VIOLATION"
    return InvalidArgument(message, code=code, field=field, received=received, allowed_values=allowed, hint=hint)
