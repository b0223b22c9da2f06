"""`@tool`: a typed Python function becomes a strict, fingerprinted tool definition.

The schema leaves the model few ways to be wrong: every parameter without a default is required, objects
are closed at every level, closed sets are enums, dates carry a format, defaults are applied by the handler
and stated in the description, and ids the code knows (`CallContext`) never appear in it.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import hashlib
import inspect
import json
import re
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal, TypedDict, Unpack, get_args, get_origin, overload

import pydantic
from pydantic import ConfigDict, TypeAdapter, create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticSerializationError

from ._approval import Approval, check_approval
from ._context import CallContext
from ._errors import DefinitionError, InternalError, InvalidArgument
from ._plain import NotPlainJson, plain_json
from ._redaction import schema_may_hide_secrets, secret_paths
from ._validate import DEFAULT_LIMITS, ArgumentValidator, Limits

__all__ = [
    "NAME_RE", "NOT_DONE", "Effect", "Handler", "Risk", "Secret", "Tool", "ToolOptions", "fingerprint", "inline_schema",
    "strict_schema", "tool"
]

Effect = Literal["read", "write"]
Risk = Literal["low", "high"]

NAME_RE: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class _SecretMarker:
    """Marks a parameter whose value never reaches a log, an audit record or a stop record."""

    def __repr__(self) -> str:
        return "toolproof.Secret"


#: Use as `Annotated[str, toolproof.Secret]`.
Secret: Final = _SecretMarker()

_UNSET: Any = object()


def fingerprint(*parts: Any) -> str:
    """A stable short hash of JSON-able parts (sorted keys, no whitespace)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- schema post-processing ----------------------------------------------------------------------------

_SCHEMA_MAP_KEYS: Final = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})


def _strip_titles(node: Any, *, in_map: bool = False) -> Any:
    """Drop pydantic's `title` noise, keeping properties that happen to be named `title`."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "title" and not in_map:
                continue
            out[key] = _strip_titles(value, in_map=key in _SCHEMA_MAP_KEYS and not in_map)
        return out
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _describe_default(value: Any) -> str:
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def _close_and_move_defaults(node: Any, *, in_map: bool = False) -> Any:
    """`additionalProperties: false` on every object with properties; `default` moved into the description."""
    if isinstance(node, list):
        return [_close_and_move_defaults(v) for v in node]
    if not isinstance(node, dict):
        return node
    if in_map:
        return {k: _close_and_move_defaults(v) for k, v in node.items()}
    out = {k: _close_and_move_defaults(v, in_map=k in _SCHEMA_MAP_KEYS) for k, v in node.items()}
    if "default" in out:
        default = out.pop("default")
        note = f"Default: {_describe_default(default)}."
        desc = out.get("description")
        if isinstance(desc, str) and desc:
            out["description"] = desc if note in desc else f"{desc.rstrip()} {note}"
        else:
            out["description"] = note
    is_object = out.get("type") == "object" or "properties" in out
    if is_object and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def _inline_refs(node: Any, defs: Mapping[str, Any], seen: frozenset[str] = frozenset()) -> Any:
    """Replace local `$ref`s by their definitions (models and linters read inline enums best).

    Recursive definitions keep their `$ref`; the caller keeps `$defs` when any remain.
    """
    if isinstance(node, list):
        return [_inline_refs(v, defs, seen) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in defs and name not in seen:
            target = _inline_refs(defs[name], defs, seen | {name})
            siblings = {k: _inline_refs(v, defs, seen) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings}
    return {k: _inline_refs(v, defs, seen) for k, v in node.items()}


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


def inline_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with local definitions inlined (kept only where recursion needs them)."""
    out = copy.deepcopy(dict(schema))
    defs = out.pop("$defs", None)
    if defs:
        out = _inline_refs(out, defs)
        if _has_ref(out):
            out["$defs"] = defs
    return out


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Pydantic's JSON Schema, made strict for models (see the module docstring)."""
    return _close_and_move_defaults(_strip_titles(inline_schema(schema)))  # type: ignore[no-any-return]


# --- type inspection ---------------------------------------------------------------------------------------

_JSON_NATIVE_SCALARS: Final = (str, int, float, bool, type(None))
_PLAIN_SCALARS: Final = frozenset({bool, type(None)})  # results that are plain JSON without a look


def _is_context(annotation: Any) -> bool:
    if annotation is CallContext:
        return True
    if get_origin(annotation) in (typing.Union, types.UnionType):
        return any(a is CallContext for a in get_args(annotation))
    return False


def _is_secret(annotation: Any) -> bool:
    return get_origin(annotation) is Annotated and any(isinstance(m, _SecretMarker) for m in annotation.__metadata__)


def _needs_conversion(annotation: Any, *, nested: bool = False) -> bool:
    """True unless validated JSON can be passed to the handler as it is (str, int, Literal, list[str], ...).

    An `int` inside a container needs conversion: JSON's `1.0` is an integer to the schema but a float to
    Python (a top-level `int` is converted by `Tool.bind`, without the model)."""
    if nested and annotation is int:
        return True
    if annotation in _JSON_NATIVE_SCALARS or annotation is Any:
        return False
    origin = get_origin(annotation)
    if origin is Annotated:
        return _needs_conversion(get_args(annotation)[0], nested=nested)
    if origin is Literal:
        return not all(isinstance(a, _JSON_NATIVE_SCALARS) for a in get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return any(_needs_conversion(a, nested=nested) for a in get_args(annotation))
    if origin in (list, dict, Sequence, Mapping):
        return any(_needs_conversion(a, nested=True) for a in get_args(annotation))
    return annotation not in (list, dict)


def _is_int(annotation: Any) -> bool:
    """An `int` parameter (also `Annotated[int, ...]`, `int | None`): JSON's `1.0` must reach it as `1`."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _is_int(get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        members = get_args(annotation)
        return int in members and float not in members
    return annotation is int


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {param: text}) from a docstring with an optional Google-style `Args:` section."""
    if not doc:
        return "", {}
    text = inspect.cleandoc(doc)
    match = re.search(r"^(Args|Arguments|Parameters):\s*$", text, re.MULTILINE)
    if not match:
        return text, {}
    head = text[: match.start()].strip()
    params: dict[str, str] = {}
    current: str | None = None
    rest = text[match.end() :].splitlines()
    for line in rest:
        if line and not line.startswith((" ", "\t")):
            # A new section (e.g. Returns:) keeps its text in the description.
            idx = rest.index(line)
            tail = "\n".join(rest[idx:]).strip()
            head = f"{head}\n\n{tail}" if tail else head
            break
        item = re.match(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
        if item and (current is None or len(line) - len(line.lstrip()) <= 8):
            current = item.group(1)
            params[current] = item.group(2).strip()
        elif current and line.strip():
            params[current] = f"{params[current]} {line.strip()}"
    return head, params


def _title(name: str) -> str:
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ").split()
    return " ".join(words).capitalize()


# --- the Tool value ----------------------------------------------------------------------------------------

Handler = Callable[..., Any]


class ToolOptions(TypedDict, total=False):
    """Every option of a tool besides what defines it (name, description, schemas, handler) and its `effect`.

    The one list: `@tool(...)`, `Tool.from_function` and `Tool.from_schema` take these as keyword arguments,
    and `Tool._build` is the one home of their defaults (`idempotent`: True for reads, False for writes; `risk`
    "low"; `limits` `DEFAULT_LIMITS`; `title` from the name; the rest empty). An unknown key is a TypeError.
    """

    idempotent: bool | None
    risk: Risk
    timeout_s: float | None
    group: str | None
    #: The arguments that identify one logical operation (default: all of them).
    operation_keys: Sequence[str] | None
    examples: Sequence[Mapping[str, Any]]
    #: Parameters holding secrets besides those annotated `Secret` (a raw schema has no annotations).
    secret_fields: Sequence[str]
    #: A read-only tool to call while this one's breaker is open.
    fallback: str | None
    #: The upstream server an imported tool comes from.
    upstream: str | None
    open_world: bool
    title: str | None
    limits: Limits
    #: Who must approve a call before it runs (see contract.approval); not part of the schema or fingerprint.
    approval: Approval
    #: A write's check of the outside world when its outcome is unknown: called with the tool's own arguments,
    #: it returns the tool's result when the effect happened, `NOT_DONE` when it did not; a raise means "cannot
    #: tell" (see docs/idempotency.md, "Settled by verify").
    verify: Handler | None


class _NotDone:
    """What a `verify` hook returns when the effect did not happen (a singleton: `toolproof.NOT_DONE`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "toolproof.NOT_DONE"

    def __reduce__(self) -> str:
        return "NOT_DONE"


#: `verify` says the write's effect did not happen: the write may be sent again under the same key.
NOT_DONE: Final = _NotDone()


@dataclass(frozen=True, slots=True)
class _Definition:
    """What the model sees and what runs, as `from_function` or `from_schema` derived it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    handler: Handler
    schema_first: bool
    secret_fields: frozenset[str] = frozenset()
    context_param: str | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    converter: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    output_adapter: TypeAdapter[Any] | None = None
    int_params: tuple[str, ...] = ()
    known_params: list[str] | None = None


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class Tool:
    """One tool: its model-facing definition, its policy facts and its handler.

    Build one with `@toolproof.tool(...)` on a typed function, or `Tool.from_schema(...)` from a raw schema;
    the policy fields are the resolved `ToolOptions`.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    handler: Handler = field(repr=False)
    effect: Effect
    idempotent: bool
    risk: Risk
    timeout_s: float | None
    group: str | None
    operation_keys: tuple[str, ...] | None
    examples: tuple[dict[str, Any], ...]
    secret_fields: frozenset[str]
    secret_paths: frozenset[tuple[str, ...]]  # where arguments hold secrets: see contract.redaction
    fallback: str | None
    upstream: str | None
    open_world: bool
    title: str
    is_async: bool
    schema_version: str
    approval: Approval = field(repr=False)
    verify: Handler | None = field(repr=False)
    validator: ArgumentValidator = field(repr=False)
    _context_param: str | None = field(repr=False)
    _defaults: Mapping[str, Any] = field(repr=False)
    _converter: Callable[[dict[str, Any]], dict[str, Any]] | None = field(repr=False)
    _int_params: tuple[str, ...] = field(repr=False)  # `int` parameters (`bind` makes 1.0 an int)
    _output_adapter: TypeAdapter[Any] | None = field(repr=False)
    _output_validator: Any = field(repr=False)
    _schema_first: bool = field(repr=False)
    #: The validated arguments are the handler's keyword arguments as they are (`bind` returns them untouched).
    _plain_kwargs: bool = field(repr=False)
    _hides_secrets: bool = field(repr=False)  # validated arguments must be walked before storing

    # --- construction -------------------------------------------------------------------------------------

    @classmethod
    def from_function(
        cls,
        fn: Handler,
        *,
        effect: Effect,
        name: str | None = None,
        description: str | None = None,
        **options: Unpack[ToolOptions],
    ) -> Tool:
        """A tool from a typed function: its parameters become a strict schema, its docstring the description."""
        tool_name = name or fn.__name__
        _check_policy(tool_name, effect, options)
        doc_text, param_docs = _parse_docstring(fn.__doc__)
        desc = (description or doc_text).strip()
        if not desc:
            raise DefinitionError(f"tool {tool_name!r} has no description: write a docstring that says what it "
                                  "does, when to use it, when not to, and what it returns")
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception as exc:
            raise DefinitionError(f"tool {tool_name!r}: cannot resolve type hints ({exc})") from None
        sig = inspect.signature(fn)
        fields: dict[str, Any] = {}
        defaults: dict[str, Any] = {}
        secrets: set[str] = set()
        context_param: str | None = None
        convert = False
        int_params: list[str] = []
        for pname, param in sig.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise DefinitionError(f"tool {tool_name!r}: *args/**kwargs cannot be described to a model")
            if param.kind is param.POSITIONAL_ONLY:
                raise DefinitionError(f"tool {tool_name!r}: positional-only parameter {pname!r}")
            if pname not in hints:
                raise DefinitionError(f"tool {tool_name!r}: parameter {pname!r} has no type annotation")
            annotation = hints[pname]
            if _is_context(annotation):
                context_param = pname
                continue
            if _is_secret(annotation):
                secrets.add(pname)
            convert = convert or _needs_conversion(annotation)
            if _is_int(annotation):
                int_params.append(pname)
            doc = param_docs.get(pname)
            if param.default is inspect.Parameter.empty:
                fields[pname] = (annotation, FieldInfo(description=doc) if doc else ...)
            else:
                defaults[pname] = param.default
                fields[pname] = (annotation, FieldInfo(default=param.default, description=doc))
        try:
            model = create_model(
                f"{tool_name}_arguments",
                __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
                **fields,
            )
            raw_schema = model.model_json_schema()
        except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
            raise DefinitionError(f"tool {tool_name!r}: a parameter type cannot be described ({exc})") from None
        input_schema = strict_schema(raw_schema)
        input_schema.pop("description", None)
        input_schema["type"] = "object"
        input_schema.setdefault("properties", {})
        input_schema.setdefault("required", [])
        if not input_schema["required"]:
            input_schema.pop("required")
        converter = _model_converter(model, list(fields)) if convert else None

        output_schema, adapter = _output_for(tool_name, hints.get("return", inspect.Signature.empty))
        definition = _Definition(
            name=tool_name,
            description=desc,
            input_schema=input_schema,
            output_schema=output_schema,
            handler=fn,
            schema_first=False,
            secret_fields=frozenset(secrets),
            context_param=context_param,
            defaults=defaults,
            converter=converter,
            output_adapter=adapter,
            int_params=() if converter is not None else tuple(int_params),
        )
        return cls._build(definition, effect, options)

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        handler: Callable[[dict[str, Any], CallContext], Any | Awaitable[Any]],
        *,
        effect: Effect,
        output_schema: Mapping[str, Any] | None = None,
        **options: Unpack[ToolOptions],
    ) -> Tool:
        """A tool from a raw JSON Schema; `handler(arguments, context)` gets the validated arguments dict.

        The schema is used as given (an imported tool is validated against its upstream's own schema).
        """
        _check_policy(name, effect, options)
        if not isinstance(input_schema, Mapping) or input_schema.get("type", "object") != "object":
            raise DefinitionError(f"tool {name!r}: the input schema must be a JSON object schema")
        schema = copy.deepcopy(dict(input_schema))
        schema.setdefault("type", "object")
        props = schema.get("properties") or {}
        definition = _Definition(
            name=name,
            description=description or "",
            input_schema=schema,
            output_schema=copy.deepcopy(dict(output_schema)) if output_schema else None,
            handler=handler,
            schema_first=True,
            known_params=list(props) if isinstance(props, Mapping) else [],
        )
        return cls._build(definition, effect, options)

    @classmethod
    def _build(cls, d: _Definition, effect: Effect, options: ToolOptions) -> Tool:
        """The tool of a definition under its options: the one home of the options' defaults."""
        name, input_schema, output_schema = d.name, d.input_schema, d.output_schema
        approval = options.get("approval")
        check_approval(name, approval)
        operation_keys = options.get("operation_keys")
        params = d.known_params if d.known_params is not None else list(input_schema.get("properties", {}))
        if operation_keys is not None:
            unknown = [k for k in operation_keys if k not in params]
            if unknown:
                raise DefinitionError(f"tool {name!r}: operation_keys name unknown parameters {unknown}")
        required = set(input_schema.get("required", ()))
        optional = frozenset(p for p in params if p not in required)
        try:
            validator = ArgumentValidator(input_schema, options.get("limits", DEFAULT_LIMITS), optional=optional)
        except (ValueError, TypeError) as exc:
            raise DefinitionError(f"tool {name!r}: the input schema does not compile ({exc})") from None
        output_validator = None
        if output_schema is not None:
            import jsonschema_rs

            try:
                output_validator = jsonschema_rs.validator_for(output_schema, validate_formats=True)
            except (ValueError, TypeError) as exc:
                raise DefinitionError(f"tool {name!r}: the output schema does not compile ({exc})") from None
        examples = tuple(dict(e) for e in options.get("examples", ()))
        for example in examples:
            try:
                validator.parse(example)
            except InvalidArgument as exc:
                raise DefinitionError(f"tool {name!r}: example {example!r} is invalid: {exc.message}") from None
        secret_fields = d.secret_fields | frozenset(options.get("secret_fields", ()))
        paths = secret_paths(input_schema, secret_fields)
        idempotent = options.get("idempotent")
        verify = options.get("verify")
        if verify is not None and (effect != "write" or not callable(verify)):
            raise DefinitionError(f"tool {name!r}: verify must be a function, and only a write has one (it settles "
                                  "a write whose outcome is unknown)")
        return cls(
            name=name,
            description=d.description,
            input_schema=input_schema,
            output_schema=output_schema,
            handler=d.handler,
            effect=effect,
            idempotent=(effect == "read") if idempotent is None else bool(idempotent),
            risk=options.get("risk", "low"),
            timeout_s=options.get("timeout_s"),
            group=options.get("group"),
            operation_keys=tuple(operation_keys) if operation_keys is not None else None,
            examples=examples,
            secret_fields=secret_fields,
            secret_paths=paths,
            fallback=options.get("fallback"),
            upstream=options.get("upstream"),
            open_world=options.get("open_world", False),
            title=options.get("title") or _title(name),
            is_async=inspect.iscoroutinefunction(d.handler),
            schema_version=fingerprint(name, d.description, input_schema, output_schema),
            approval=approval,
            verify=verify,
            validator=validator,
            _context_param=d.context_param,
            _defaults=d.defaults,
            _converter=d.converter,
            _int_params=d.int_params,
            _output_adapter=d.output_adapter,
            _output_validator=output_validator,
            _schema_first=d.schema_first,
            # A wrapper (functools.wraps) gets its defaults from `defaults`, not from Python: not plain.
            _plain_kwargs=not d.schema_first and d.converter is None and not d.int_params
            and d.context_param is None and not hasattr(d.handler, "__wrapped__"),
            _hides_secrets=bool(paths) or schema_may_hide_secrets(input_schema),
        )

    def with_approval(self, approval: Approval) -> Tool:
        """The same tool (same schema, same fingerprint) with another approval rule."""
        check_approval(self.name, approval)
        return dataclasses.replace(self, approval=approval)

    # --- the call path (used by the Runner) -------------------------------------------------------------

    def parse_arguments(self, arguments: Any) -> dict[str, Any]:
        """Validated arguments (raises `InvalidArgument`). A null for an optional field means "not given"."""
        return self.validator.parse(arguments)

    def bind(self, args: dict[str, Any], context: CallContext) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Positional and keyword arguments for the handler: defaults applied, types converted, context injected.

        The keyword arguments may be `args` itself (Python applies the defaults): neither is ever mutated."""
        if self._plain_kwargs:
            return (), args
        if self._schema_first:
            return (args, context), {}
        if self._converter is not None:
            kwargs = self._converter(args)
        elif self._defaults:
            kwargs = {**self._defaults, **args}
        else:
            kwargs = dict(args)
        for name in self._int_params:
            if type(kwargs.get(name)) is float:  # JSON's 1.0 and 1e2 are integers to the schema
                kwargs[name] = int(kwargs[name])
        if self._context_param is not None:
            kwargs[self._context_param] = context
        return (), kwargs

    def check_output(self, value: Any) -> Any:
        """The handler's result as plain JSON data (see `plain_json`; text UTF-8 cannot carry becomes U+FFFD),
        checked against the output schema."""
        adapter = self._output_adapter
        if adapter is not None:
            try:
                value = adapter.dump_python(value, mode="json", warnings="error")
            except (pydantic.ValidationError, PydanticSerializationError, TypeError, ValueError):
                raise _broken_contract(self.name) from None
        kind = type(value)
        if kind not in _PLAIN_SCALARS and not (kind is float and value - value == 0):  # a finite float: no walk
            try:
                value = plain_json(value)
            except NotPlainJson as exc:
                raise InternalError(
                    f"The tool {self.name} returned a result JSON cannot carry: {exc}.",
                    code="RESULT_NOT_JSON",
                    hint="Do not call again; tell a person. The tool broke its contract.",
                ) from None
        if self._output_validator is not None:
            try:
                ok = self._output_validator.is_valid(value)
            except (ValueError, TypeError):
                ok = False
            if not ok:
                raise _broken_contract(self.name)
        return value


def _broken_contract(name: str) -> InternalError:
    return InternalError(
        f"The tool {name} returned a result that breaks its own output schema.",
        code="OUTPUT_SCHEMA_VIOLATION",
        hint="Do not call again; tell a person. The tool broke its contract.",
    )


def _check_option_names(options: Mapping[str, Any]) -> None:
    unknown = sorted(options.keys() - ToolOptions.__optional_keys__)
    if unknown:
        raise TypeError(f"unexpected tool option(s): {', '.join(unknown)} (see toolproof.ToolOptions)")


def _check_policy(name: str, effect: Any, options: ToolOptions) -> None:
    _check_option_names(options)
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise DefinitionError(
            f"tool name {name!r} must match {NAME_RE.pattern} (MCP clients and model APIs reject others); to only "
            "search a catalogue with such names, index its definitions: toolproof.retrieval.ToolIndex.from_definitions"
        )
    if effect not in ("read", "write"):
        raise DefinitionError(
            f"tool {name!r}: effect is required and must be 'read' or 'write' (got {effect!r}); "
            "there is no silent default"
        )
    risk = options.get("risk", "low")
    if risk not in ("low", "high"):
        raise DefinitionError(f"tool {name!r}: risk must be 'low' or 'high' (got {risk!r})")
    timeout_s = options.get("timeout_s")
    if timeout_s is not None and not (isinstance(timeout_s, int | float) and timeout_s > 0):
        raise DefinitionError(f"tool {name!r}: timeout_s must be a positive number")


def _model_converter(model: type[pydantic.BaseModel], names: list[str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    validate = model.model_validate

    def convert(args: dict[str, Any]) -> dict[str, Any]:
        try:
            instance = validate(args)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            raise InvalidArgument(
                f"{loc or 'the arguments'}: {first.get('msg', 'invalid value')}.",
                code="INVALID_VALUE",
                field=loc or None,
                hint="Correct the value as the message says.",
            ) from None
        return {n: getattr(instance, n) for n in names}

    return convert


def _output_for(tool_name: str, annotation: Any) -> tuple[dict[str, Any] | None, TypeAdapter[Any] | None]:
    if annotation is inspect.Signature.empty or annotation is Any or annotation is None or annotation is type(None):
        return None, None
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        schema = _strip_titles(inline_schema(adapter.json_schema(mode="serialization")))
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        raise DefinitionError(f"tool {tool_name!r}: the return type cannot be described ({exc})") from None
    return schema, (adapter if _needs_conversion(annotation) else None)


# --- the decorator -------------------------------------------------------------------------------------------


@overload
def tool(fn: Handler, /) -> Tool: ...


@overload
def tool(
    *, effect: Effect, name: str | None = None, description: str | None = None, **options: Unpack[ToolOptions]
) -> Callable[[Handler], Tool]: ...


def tool(
    fn: Handler | None = None,
    /,
    *,
    effect: Effect = _UNSET,
    name: str | None = None,
    description: str | None = None,
    **options: Unpack[ToolOptions],
) -> Tool | Callable[[Handler], Tool]:
    """Define a tool from a typed function. `effect` ("read" or "write") is required: no silent default.

    `idempotent` defaults to True for reads and False for writes; declare a write idempotent only when its
    owner enforces the idempotency key. `operation_keys` names the arguments that identify one logical
    operation (default: all). `fallback` names a read-only tool to call while this one's breaker is open.
    `approval` ("always", "never" or a policy of the validated arguments and the context) makes a call wait
    for a person's approval before it runs (see toolproof.contract._approval). The other options are those of
    `ToolOptions`.
    """
    _check_option_names(options)

    def decorate(func: Handler) -> Tool:
        if effect is _UNSET:
            raise DefinitionError(
                f"tool {getattr(func, '__name__', '?')!r}: effect is required: @tool(effect='read') or "
                "@tool(effect='write')"
            )
        return Tool.from_function(func, effect=effect, name=name, description=description, **options)

    if fn is not None:
        return decorate(fn)
    return decorate
