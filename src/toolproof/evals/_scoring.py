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
from collections.abc import Callable, Mapping, Sequence
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
class LiteralParam:
    """How a language's literal decoder reads one declared parameter (see `literals`): a sent value must be a
    string, which `convert` turns into a value that must have type `expected` (items of type `nested`)."""

    expected: type
    nested: type | None
    convert: Callable[[str], Any]
    not_a_literal: str  # the `expected` of the error when the sent value is not a string


#: A decoder is asked once per declared parameter; None: the declared type is not one of its literals.
Decode = Callable[[Mapping[str, Any]], LiteralParam | None]


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    """One expected call: the tool and a matcher per key argument.

    strict: every sent parameter must have a matcher (BFCL); otherwise unlisted schema parameters are free.
    """

    tool: str
    arguments: Mapping[str, Matcher] = field(default_factory=dict)
    strict: bool = False
    #: The last checker compiled from this call, with the spec and decoder it was built for.
    _checker: tuple[ToolSpec | None, Decode | None, CallChecker] | None = field(
        default=None, init=False, repr=False, compare=False)

    def checker(self, spec: ToolSpec | None, decode: Decode | None = None) -> CallChecker:
        """This call compiled against `spec`, reused while the same spec and decoder come back (the replies
        to one case are all scored against one expected call and one spec)."""
        memo = self._checker
        if memo is not None and memo[0] is spec and memo[1] is decode:
            return memo[2]
        checker = CallChecker.build(self, spec, decode)
        object.__setattr__(self, "_checker", (spec, decode, checker))  # a cache: not compared, not pickled
        return checker

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled without its compiled checker (a literal decoder is a closure): the copy compiles its own."""
        return type(self), (self.tool, self.arguments, self.strict)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the scorer needs of a tool's input schema: declared properties and required names."""

    name: str
    properties: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...] = ()
    closed: bool = True  # parameters outside `properties` are unexpected

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


def _param_types(prop: Mapping[str, Any]) -> tuple[str | None, type | None, type | None]:
    """A parameter's declared type, the Python type its value must have and an array's item type."""
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


def _item_types(options: Sequence[Any], nested: type) -> tuple[frozenset[type], ...] | None:
    """BFCL's nested type rule, one set per allowed list: an item has the declared item type or that list's
    own item type. None when an allowed value is not a list (any list passes); empty: no list passes."""
    if any(not isinstance(option, list) for option in options):
        return None
    allowed = (frozenset(t for t in (nested, _first_type(option)) if t is not None) for option in options)
    return tuple(dict.fromkeys(allowed))


def _items_ok(value: list[Any], item_types: tuple[frozenset[type], ...]) -> bool:
    return any(all(type(item) in allowed for item in value) for allowed in item_types)


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


# How a value of exactly the declared type is compared with the allowed values (BFCL's rules).
_IN, _STRING, _LIST, _DICT, _LIST_OF_DICTS = range(5)
_NOTHING: Final[frozenset[str]] = frozenset()


def _comparison(matcher: Options, expected: type, nested: type | None) -> int:
    if expected is dict:
        return _DICT
    if expected is list and nested is dict:
        return _LIST_OF_DICTS
    if expected is str and matcher.normalise_strings:
        return _STRING
    if expected is list and matcher.normalise_strings:
        return _LIST
    return _IN


def _approx_error(name: str, value: Any, matcher: Approx, declared: str | None) -> FieldError | None:
    if type(value) not in (int, float):
        return FieldError("wrong_type", name, declared, value)
    if not math.isclose(float(value), matcher.value, rel_tol=0.0, abs_tol=matcher.tolerance):
        return FieldError("wrong_value", name, matcher.value, value)
    return None


class ParamCheck:
    """One parameter's check, with all that depends on the schema and the answer alone worked out when it is
    built: the declared and decoded types, BFCL's 'variable' rule, the allowed values standardised.

    BFCL's type rule: a value of the declared type is compared by the declared type's rules; a value of the
    answers' own type (a 'variable': the answer is of another type than declared) is compared as it is.
    One slotted object a parameter, sharing the matcher's tuples: a corpus builds thousands, and every extra
    object lengthens the garbage collector's walks while it loads."""

    __slots__ = (
        "absent",
        "answer_type",
        "approx",
        "coerce",
        "comparison",
        "declared",
        "exact",
        "expected",
        "item_types",
        "lists",
        "literal",
        "name",
        "normalised",
        "options",
        "values",
    )

    def __init__(self, name: str, matcher: Matcher | None, prop: Mapping[str, Any], decode: Decode | None) -> None:
        declared, expected, nested = _param_types(prop)
        self.literal = decode(prop) if decode is not None else None
        if decode is not None:
            expected, nested = (self.literal.expected, self.literal.nested) if self.literal else (None, None)
        self.name, self.declared, self.expected = name, declared, expected
        self.coerce = decode is None and declared in ("float", "number")
        self.absent = isinstance(matcher, Absent)
        self.approx = matcher if isinstance(matcher, Approx) else None
        self.options = options = matcher if isinstance(matcher, Options) else None
        self.values = values = options.values if options is not None else ()
        self.answer_type = answer_type = _first_type(values)
        variable = answer_type is not None and answer_type is not expected
        self.item_types = _item_types(values, nested) if expected is not None and nested is not None else None
        self.comparison = _comparison(options, expected, nested) if options is not None and expected is not None \
            and not variable else _IN
        # an allowed string sent as it is passes as well: equal strings are equal after standardising too
        self.exact = () if self.comparison != _STRING else values if all(type(v) is str for v in values) \
            else tuple(v for v in values if type(v) is str)
        self.normalised = options.normalised if options is not None else _NOTHING
        self.lists = [[_norm(x) for x in o] for o in values if isinstance(o, list)] if self.comparison == _LIST \
            else ()

    def check(self, value: Any) -> FieldError | None:
        """The error the sent value makes, or None."""
        literal = self.literal
        if literal is not None:
            if type(value) is not str:
                return FieldError("wrong_type", self.name, literal.not_a_literal, value)
            value = literal.convert(value)
        elif self.coerce and type(value) is int:
            value = float(value)
        if self.absent:
            return FieldError("should_be_absent", self.name, None, value)
        if self.approx is not None:
            return _approx_error(self.name, value, self.approx, self.declared)
        comparison = _IN
        expected = self.expected
        if expected is not None:
            kind = type(value)
            if kind is expected:
                if self.item_types is not None and not _items_ok(value, self.item_types):
                    return FieldError("wrong_type", self.name, self.declared, value)
                comparison = self.comparison
            elif kind is not self.answer_type:
                return FieldError("wrong_type", self.name, self.declared, value)
        if self.options is None or self._allowed(value, comparison):
            return None
        return FieldError("wrong_value", self.name, [o for o in self.values if o != ""], value)

    def _allowed(self, value: Any, comparison: int) -> bool:
        if comparison == _STRING:
            return value in self.exact or normalise(value) in self.normalised
        if comparison == _IN:
            return value in self.values
        if comparison == _LIST:
            return [_norm(x) for x in value] in self.lists
        if comparison == _DICT:
            return _dict_ok(value, self.values)
        return _list_of_dicts_ok(value, self.values)


#: A parameter nothing is asked of (neither declared nor expected, in a spec that allows such).
_FREE: Final = ParamCheck("", None, {}, None)


_PASSED: Final = CallCheck(True, True)


@dataclass(frozen=True, slots=True)
class CallChecker:
    """One expected call compiled against its tool's spec, once: a check per parameter the call may send,
    so scoring a call walks its arguments, never the schema."""

    tool: str
    required: tuple[str, ...]
    params: Mapping[str, ParamCheck | None]  # None: sending it is an unexpected parameter
    others: ParamCheck | None  # a parameter neither declared nor expected; None: unexpected
    arguments: Mapping[str, Matcher]  # the expected call's matchers
    missing: tuple[str, ...]  # the expected parameters that may not be left out

    @classmethod
    def build(cls, expected: ExpectedCall, spec: ToolSpec | None, decode: Decode | None = None) -> CallChecker:
        properties: Mapping[str, Any] = spec.properties if spec is not None else {}
        closed = spec is not None and spec.closed
        params: dict[str, ParamCheck | None] = {}
        for name in (*properties, *(n for n in expected.arguments if n not in properties)):
            matcher = expected.arguments.get(name)
            if (closed and name not in properties) or (expected.strict and matcher is None):
                params[name] = None
                continue
            prop = properties.get(name)
            params[name] = ParamCheck(name, matcher, prop if isinstance(prop, Mapping) else {}, decode)
        missing = tuple(n for n, m in expected.arguments.items() if not m.optional)
        return cls(expected.tool, spec.required if spec is not None else (), params,
                   None if closed or expected.strict else _FREE, expected.arguments, missing)

    def check(self, call: ToolCall) -> CallCheck:
        """Score one call. Tool choice and arguments are separate verdicts; the first argument error stops
        the check (as BFCL does) so a failure is counted once, on the field that broke it."""
        if call.name != self.tool:
            return CallCheck(False, False, (FieldError("wrong_tool", None, self.tool, call.name),))
        args = call.arguments
        if args is None:
            return CallCheck(True, False, (FieldError("malformed_arguments", None, None, call.raw_arguments),))
        for name in self.required:
            if name not in args:
                return CallCheck(True, False, (FieldError("missing_required", name),))
        params, others = self.params, self.others
        for name, value in args.items():
            param = params.get(name, others)
            error = FieldError("unexpected_param", name, None, value) if param is None else param.check(value)
            if error is not None:
                return CallCheck(True, False, (error,))
        for name in self.missing:
            if name not in args:
                return CallCheck(True, False, (FieldError("missing_expected", name, _describe(self.arguments[name])),))
        return _PASSED


def check_call(expected: ExpectedCall, call: ToolCall, spec: ToolSpec | None, decode: Decode | None = None
               ) -> CallCheck:
    """Score one call against one expected call (see `CallChecker.check`)."""
    return expected.checker(spec, decode).check(call)


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
    decode: Decode | None = None,
) -> CallCheck:
    """Parallel calls in any order: each expected call takes the first unmatched call that passes (BFCL)."""
    return check_parallel_compiled([e.checker(specs.get(e.tool), decode) for e in expected], calls)


def check_parallel_compiled(checkers: Sequence[CallChecker], calls: Sequence[ToolCall]) -> CallCheck:
    """`check_parallel` with the expected calls already compiled."""
    if len(calls) != len(checkers):
        return CallCheck(False, False, (FieldError("wrong_count", None, len(checkers), len(calls)),))
    used: set[int] = set()
    for checker in checkers:
        last: CallCheck | None = None
        for index, call in enumerate(calls):
            if index in used:
                continue
            last = checker.check(call)
            if last is _PASSED:  # a checker's only passing verdict
                used.add(index)
                break
        if last is not _PASSED:
            tool_ok = sorted(c.name for c in calls) == sorted(c.tool for c in checkers)
            errors = last.errors if last is not None else (FieldError("wrong_count", None, len(checkers), 0),)
            return CallCheck(tool_ok, False, errors)
    return _PASSED
