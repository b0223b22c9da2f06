"""The argument scorer: one tool call against one expected call, field by field, with BFCL's checking rules.

Rules (the Berkeley Function Calling Leaderboard's AST checker, re-implemented as typed values so the
selection eval and the BFCL runner share one scorer): the function name must match; every required
parameter must be present; no parameter outside the schema (or, in strict mode, outside the expected
ones); an int is accepted where a float is declared; strings compare after normalisation (case, spaces and
`,./-_*^` removed) unless the matcher asks for an exact value; lists compare in order; dicts compare key by
key; a parameter whose allowed values include "absent" may be left out. Parallel calls match in any order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

FieldErrorKind = Literal[
    "wrong_tool",
    "wrong_count",
    "malformed_arguments",
    "missing_required",
    "unexpected_param",
    "wrong_type",
    "wrong_value",
    "missing_expected",
    "should_be_absent",
]

# BFCL's Python type names (and JSON Schema's) -> the Python type a value must have.
PYTHON_TYPES: Final[Mapping[str, type]] = {
    "string": str,
    "integer": int,
    "float": float,
    "number": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "object": dict,
    "any": str,
}
NESTED_TYPES: Final = frozenset({"array", "tuple"})

_NORMALISE_RE: Final = re.compile(r"[ \,\.\/\-\_\*\^]")


def normalise(text: str) -> str:
    """BFCL's string standardisation: drop spaces and `,./-_*^`, lowercase, single quotes to double."""
    return _NORMALISE_RE.sub("", text).lower().replace("'", '"')


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call a model asked for. `arguments` is None when the model sent arguments that are not a JSON
    object (kept verbatim in `raw_arguments`)."""

    name: str
    arguments: Mapping[str, Any] | None
    raw_arguments: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "arguments": dict(self.arguments) if self.arguments is not None
                               else None}
        if self.raw_arguments is not None and self.arguments is None:
            out["raw_arguments"] = self.raw_arguments
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
            raise ValueError("a call is an object with a string 'name'")
        args = data.get("arguments")
        if args is not None and not isinstance(args, Mapping):
            raise ValueError(f"call arguments must be an object or null, got {type(args).__name__}")
        return cls(str(data["name"]), args, data.get("raw_arguments"))


@dataclass(frozen=True, slots=True)
class FieldError:
    """One reason a call failed, named by field so failures can be counted per tool and field."""

    kind: FieldErrorKind
    field: str | None = None
    expected: Any = None
    received: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "expected": self.expected, "received": self.received}


@dataclass(frozen=True, slots=True)
class CallCheck:
    """The verdict on one call (or one set of parallel calls): tool choice and arguments kept apart."""

    tool_ok: bool
    args_ok: bool
    errors: tuple[FieldError, ...] = ()

    @property
    def ok(self) -> bool:
        return self.tool_ok and self.args_ok


# ---------------------------------------------------------------------------------------------- matchers


@dataclass(frozen=True, slots=True)
class Options:
    """BFCL's form: the value must be one of `values`; `optional` means leaving it out is also right.

    `normalise_strings` applies BFCL's string standardisation (on by default, as BFCL does)."""

    values: tuple[Any, ...]
    optional: bool = False
    normalise_strings: bool = True
    #: The string values standardised once: thousands of calls are scored against one expected call.
    normalised: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "normalised", frozenset(normalise(v) for v in self.values if type(v) is str))


@dataclass(frozen=True, slots=True)
class Approx:
    """A number within `tolerance` of `value` (absolute)."""

    value: float
    tolerance: float = 1e-9
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Absent:
    """The parameter must not be sent."""

    optional: bool = True


@dataclass(frozen=True, slots=True)
class AnyValue:
    """The parameter must be present; any value of the declared type is right."""

    optional: bool = False


Matcher = Options | Approx | Absent | AnyValue


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    """One expected call: the tool and a matcher per key argument.

    strict: every sent parameter must have a matcher (BFCL); otherwise unlisted schema parameters are free.
    """

    tool: str
    arguments: Mapping[str, Matcher] = field(default_factory=dict)
    strict: bool = False


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the scorer needs of a tool's input schema: declared properties and required names."""

    name: str
    properties: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...] = ()
    closed: bool = True  # parameters outside `properties` are unexpected
    _types: dict[str, _ParamTypes] = field(default_factory=dict, init=False, repr=False, compare=False)

    def param_types(self, name: str) -> _ParamTypes:
        """A parameter's declared type, the Python type its value must have and an array's item type,
        worked out from the schema the first time a call sends it."""
        hit = self._types.get(name)
        if hit is None:
            hit = self._types[name] = _param_types(self.properties.get(name, {}))
        return hit

    @classmethod
    def from_schema(cls, name: str, schema: Mapping[str, Any]) -> ToolSpec:
        props = schema.get("properties") or {}
        return cls(name, dict(props), tuple(schema.get("required") or ()))


# ---------------------------------------------------------------------------------------------- values


def _declared_type(prop: Mapping[str, Any]) -> str | None:
    t = prop.get("type")
    if isinstance(t, list):
        non_null = [x for x in t if x != "null"]
        t = non_null[0] if len(non_null) == 1 else None
    if t is None and "enum" in prop:
        values = prop["enum"]
        if values and all(isinstance(v, str) for v in values):
            return "string"
    if t is None and "anyOf" in prop:
        kinds = [_declared_type(p) for p in prop["anyOf"] if p.get("type") != "null"]
        return kinds[0] if len(kinds) == 1 else None
    return t if isinstance(t, str) else None


_ParamTypes = tuple[str | None, type | None, type | None]


def _param_types(prop: Mapping[str, Any]) -> _ParamTypes:
    declared = _declared_type(prop)
    expected = PYTHON_TYPES.get(declared) if declared else None
    nested: type | None = None
    if declared in NESTED_TYPES:
        items = prop.get("items")
        item_type = _declared_type(items) if isinstance(items, Mapping) else None
        nested = PYTHON_TYPES.get(item_type) if item_type else None
    return declared, expected, nested


def _first_type(options: Sequence[Any]) -> type | None:
    for option in options:
        if option != "":
            return type(option)
    return None


def _type_ok(value: Any, options: Sequence[Any], expected: type, nested: type | None) -> tuple[bool, bool]:
    """BFCL's type rule: (valid, is_variable). A value of the answers' own type counts as a 'variable'."""
    answer_type = _first_type(options)
    is_variable = answer_type is not None and answer_type is not expected
    if type(value) is expected:
        if nested is None:
            return True, is_variable
        items: list[Any] = value if isinstance(value, list) else []
        for option in options:
            if not isinstance(option, list) or all(_type_ok(item, option, nested, None)[0] for item in items):
                return True, is_variable
        return False, False  # BFCL: a failed nested check is not rescued by the "variable" rule
    if answer_type is not None and type(value) is answer_type:
        return True, True
    return False, False


def _norm(value: Any) -> Any:
    return normalise(value) if type(value) is str else value


def _dict_ok(value: Mapping[str, Any], options: Sequence[Any]) -> bool:
    for option in options:
        if option == "":
            continue
        if not isinstance(option, Mapping):
            return False
        good = True
        for key, item in value.items():
            if key not in option or _norm(item) not in [_norm(o) for o in option[key]]:
                good = False
                break
        if good:
            for key, allowed in option.items():
                if key not in value and "" not in allowed:
                    good = False
                    break
        if good:
            return True
    return False


def _list_of_dicts_ok(value: Sequence[Any], options: Sequence[Any]) -> bool:
    for option in options:
        if not isinstance(option, list) or len(value) != len(option):
            continue
        if all(isinstance(v, Mapping) and _dict_ok(v, [o]) for v, o in zip(value, option, strict=True)):
            return True
    return False


def _value_ok(value: Any, matcher: Options, expected: type | None, nested: type | None, is_variable: bool) -> bool:
    options = list(matcher.values)
    if not is_variable and expected is not None:
        if expected is dict:
            return isinstance(value, Mapping) and _dict_ok(value, options)
        if expected is list and nested is dict:
            return isinstance(value, list) and _list_of_dicts_ok(value, options)
        if expected is str and matcher.normalise_strings:
            return normalise(value) in matcher.normalised
        if expected is list and matcher.normalise_strings:
            candidate = [_norm(v) for v in value]
            return any(isinstance(o, list) and [_norm(x) for x in o] == candidate for o in options)
    return bool(value in options)


def _check_param(
    name: str, value: Any, matcher: Matcher | None, prop: Mapping[str, Any], types: _ParamTypes, decode: Any = None
) -> FieldError | None:
    declared, expected, nested = types
    if decode is not None:
        decoded: tuple[Any, type | None, type | None, FieldError | None] = decode(name, value, prop)
        value, expected, nested, error = decoded
        if error is not None:
            return error
    if decode is None and declared in ("float", "number") and type(value) is int:
        value = float(value)
    if isinstance(matcher, Absent):
        return FieldError("should_be_absent", name, None, value)
    if isinstance(matcher, Approx):
        if type(value) not in (int, float):
            return FieldError("wrong_type", name, declared, value)
        if not math.isclose(float(value), matcher.value, rel_tol=0.0, abs_tol=matcher.tolerance):
            return FieldError("wrong_value", name, matcher.value, value)
        return None
    options = matcher.values if isinstance(matcher, Options) else ()
    is_variable = False
    if expected is not None:
        valid, is_variable = _type_ok(value, options, expected, nested)
        if not valid:
            return FieldError("wrong_type", name, declared, value)
    if isinstance(matcher, AnyValue) or matcher is None:
        return None
    if not _value_ok(value, matcher, expected, nested, is_variable):
        return FieldError("wrong_value", name, [o for o in matcher.values if o != ""], value)
    return None


_UNTYPED: Final[_ParamTypes] = (None, None, None)
_PASSED: Final = CallCheck(True, True)


def check_call(expected: ExpectedCall, call: ToolCall, spec: ToolSpec | None, decode: Any = None) -> CallCheck:
    """Score one call. Tool choice and arguments are separate verdicts; the first argument error stops
    the check (as BFCL does) so a failure is counted once, on the field that broke it."""
    if call.name != expected.tool:
        return CallCheck(False, False, (FieldError("wrong_tool", None, expected.tool, call.name),))
    if call.arguments is None:
        return CallCheck(True, False, (FieldError("malformed_arguments", None, None, call.raw_arguments),))
    args = call.arguments
    properties: Mapping[str, Mapping[str, Any]] = spec.properties if spec else {}
    for name in spec.required if spec else ():
        if name not in args:
            return CallCheck(True, False, (FieldError("missing_required", name),))
    for name, value in args.items():
        matcher = expected.arguments.get(name)
        outside = spec is not None and spec.closed and name not in properties
        if outside or (expected.strict and matcher is None):
            return CallCheck(True, False, (FieldError("unexpected_param", name, None, value),))
        types = spec.param_types(name) if spec is not None else _UNTYPED
        error = _check_param(name, value, matcher, properties.get(name, {}), types, decode)
        if error is not None:
            return CallCheck(True, False, (error,))
    for name, matcher in expected.arguments.items():
        if name not in args and not matcher.optional:
            return CallCheck(True, False, (FieldError("missing_expected", name, _describe(matcher)),))
    return _PASSED


def _describe(matcher: Matcher) -> Any:
    if isinstance(matcher, Options):
        return [v for v in matcher.values if v != ""]
    if isinstance(matcher, Approx):
        return matcher.value
    return None


def check_parallel(
    expected: Sequence[ExpectedCall],
    calls: Sequence[ToolCall],
    specs: Mapping[str, ToolSpec],
    decode: Any = None,
) -> CallCheck:
    """Parallel calls in any order: each expected call takes the first unmatched call that passes (BFCL)."""
    if len(calls) != len(expected):
        return CallCheck(False, False, (FieldError("wrong_count", None, len(expected), len(calls)),))
    used: set[int] = set()
    tool_ok = sorted(c.name for c in calls) == sorted(e.tool for e in expected)
    for exp in expected:
        last: CallCheck | None = None
        for index, call in enumerate(calls):
            if index in used:
                continue
            last = check_call(exp, call, specs.get(exp.tool), decode)
            if last.ok:
                used.add(index)
                break
        if last is None or not last.ok:
            errors = last.errors if last is not None else (FieldError("wrong_count", None, len(expected), 0),)
            return CallCheck(tool_ok, False, errors)
    return _PASSED
