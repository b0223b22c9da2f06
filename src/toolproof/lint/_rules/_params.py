"""Parameter rules (TP3xx): few ways to be wrong. Typed, described, units in names, enums not prose, dates
with a format, closed objects, and no ids the code already knows."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Final

from .._config import LintConfig
from .._model import ToolDef
from .._schema_walk import JSON_TYPES, is_object
from .._text import COUNT_WORDS, QUANTITY_WORDS, UNIT_SUFFIXES, UNIT_SYMBOLS, UNITS, folded, name_words, text_words
from ._base import Hit, Rule

# The phrase patterns are written in lower case and matched against folded text (`text.folded`).
_SAYS_DEFAULT: Final = re.compile(r"\bdefault")
_SAYS_OPTIONAL: Final = re.compile(r"\boptional\b")
_SAYS_ANY: Final = re.compile(r"\bany\b")
_TYPED_BY: Final = frozenset({"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "not"})
_CLOSED_BY: Final = frozenset({"enum", "const", "anyOf", "oneOf", "format", "pattern"})  # a set, not prose
_BOUNDED_BY: Final = frozenset({"maxLength", "enum", "const", "pattern", "format"})
_STANDARD: Final = {"dict": "object", "hashmap": "object", "map": "object", "float": "number", "double": "number",
                    "long": "integer", "int": "integer", "tuple": "array", "arraylist": "array", "list": "array",
                    "bool": "boolean", "char": "string", "str": "string"}


def check_no_description(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.params:
        if not node.description.strip() and "$ref" not in node.schema:
            yield Hit(tool, node.pointer, f"parameter {node.name!r} has no description",
                      "Say what it is, its unit or format, and an example value.")


def _has_unit(words: list[str], text: str) -> bool:
    return any(w in UNITS for w in words) or any(s in text for s in UNIT_SYMBOLS)


def check_quantity_unit(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.params:
        if not node.types & {"number", "integer", "float", "double", "long"}:
            continue
        assert node.name is not None
        words = name_words(node.name)
        if not set(words) & QUANTITY_WORDS or set(words) & COUNT_WORDS:
            continue
        if node.name.lower().endswith(UNIT_SUFFIXES):
            continue
        desc = node.description
        low = folded(desc)
        if _has_unit([*words, *text_words(desc)], desc) or _COUNTED.search(low):
            continue
        if "temperature" in words and _SAMPLING.search(low):
            continue
        if _UNITLESS.search(low) or (_GEOMETRY.search(folded(f"{tool.label} {tool.description_text}"))
                                     and not _PHYSICAL.search(tool.description_folded)):
            continue  # a multiplier or ratio, or pure geometry (any consistent unit works)
        yield Hit(tool, node.pointer, f"numeric parameter {node.name!r} is a quantity with no unit in its name "
                  "or description; the model will guess one",
                  f"Put the unit in the name ('{node.name}_kg', '{node.name}_seconds') and say conversions in "
                  "the description.")


_UNITLESS: Final = re.compile(r"\b(multiplier|factor|times|scale|relative|normali[sz]ed|fraction|"
                             r"half speed|double speed)\b")
_GEOMETRY: Final = re.compile(r"\b(geometry|geometric|triangle|rectangle|circle|polygon|square|trapezoid|"
                              r"parallelogram|cone|cylinder|sphere|cube|prism|pyramid|perimeter|hypotenuse)")
_PHYSICAL: Final = re.compile(r"\b(mass|density|weight|force|pressure|energy|velocity|speed|time|price|cost|"
                              r"temperature)\b")
_COUNTED: Final = re.compile(r"\b(the number of|number of|how many|count of|maximum number|max number)\b")
_SAMPLING: Final = re.compile(r"sampl|random|creativ|model")  # a model's sampling temperature
# Words that announce a closed set. Quoted values after "e.g."/"such as" are examples, not a set.
_PROSE_SET: Final = re.compile(
    r"\b(one of(?! the\b| a\b| an\b| its\b| their\b| these\b| those\b| two\b| several\b| many\b| our\b| your\b)|"
    r"possible values|allowed values|valid values|supported values|accepted values|options are|"
    r"options:|values are|choose from|either '|either \")",
)
_EXAMPLES: Final = re.compile(r"e\.g\.|\beg\.|\b(such as|for example|for instance|like|etc)\b")


def check_enum_in_prose(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.params:
        s = node.schema
        if not _CLOSED_BY.isdisjoint(s):
            continue
        if node.types - {"string", "String"} or not node.types:
            continue
        desc = node.description
        low = folded(desc)
        if _PROSE_SET.search(low) and not _EXAMPLES.search(low):
            yield Hit(tool, node.pointer, f"parameter {node.name!r} lists its allowed values in prose "
                      f"({desc.strip()[:80]!r}) instead of an enum", "Move the values into an `enum`.")


_DATE_WORDS: Final = frozenset({"date", "datetime", "timestamp", "time", "dob", "birthday", "birthdate", "deadline",
                                "since", "until", "day"})
_NOT_DATE: Final = frozenset({"zone", "timezone", "tz", "format", "unit", "units", "range", "period", "frame",
                              "window", "type", "series", "out", "timeout", "times", "of", "slot", "slots", "span",
                              "spent", "limit", "field", "column", "key", "granularity", "mode", "interval"})
_PROSE_FORMAT: Final = re.compile(r"yyyy|iso[ -]?8601|rfc ?3339|hh:mm|\bformat\b")
_DATE_DESC: Final = re.compile(r"\b(date|datetime|timestamp|iso[ -]?8601|yyyy|rfc ?3339)\b")


def check_date_format(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.params:
        s = node.schema
        if node.types - {"string", "String"} or "format" in s or "pattern" in s or "enum" in s or "const" in s:
            continue
        assert node.name is not None
        words = set(name_words(node.name))
        if words & _NOT_DATE:
            continue
        bounds = words & {"start", "end", "from", "to", "begin", "after", "before"}
        if words & _DATE_WORDS or (bounds and _DATE_DESC.search(folded(node.description))):
            if _PROSE_FORMAT.search(folded(node.description)):
                why = "its format is stated only in prose, so nothing checks it"
            else:
                why = "the model will invent one ('Thursday', '10/23')"
            yield Hit(tool, node.pointer, f"date/time parameter {node.name!r} has no `format` or `pattern`; {why}",
                      "Add \"format\": \"date\" (YYYY-MM-DD) or \"date-time\" (RFC 3339).")


def check_default_schema_only(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.params:
        if "default" not in node.schema:
            continue
        if _SAYS_DEFAULT.search(folded(node.description)):
            continue
        try:
            value = json.dumps(node.schema["default"], ensure_ascii=False, default=str)[:40]
        except (RecursionError, ValueError):
            value = "(a deeply nested value)"
        yield Hit(tool, node.pointer, f"parameter {node.name!r} has default {value} stated only in the schema; "
                  "many clients drop `default`, so the model never sees it",
                  f"Say it in the description: 'Default: {value}.' and apply it in the handler.")


_CONTEXT_IDS: Final = frozenset({
    "conversation_id", "session_id", "idempotency_key", "idempotency_token", "request_key", "api_key", "apikey",
    "access_token", "auth_token", "bearer_token", "token", "client_secret", "api_secret", "refresh_token",
    "session_token", "jwt", "api_token", "secret_key", "authorization", "credentials", "cookie", "access_key",
    "secret_access_key", "personal_access_token", "oauth_token", "auth",
})
_PRINCIPAL_IDS: Final = frozenset({"user_id", "userid", "buyer_id", "customer_id", "account_id", "owner_id",
                                   "member_id", "principal_id", "caller_id", "tenant_id"})


def _joined(name: str) -> str:
    return "_".join(name_words(name))


_STORES_CREDENTIALS: Final = frozenset({"add", "register", "set", "configure", "save", "store", "connect", "login",
                                        "authenticate", "create", "update", "rotate", "revoke", "validate", "verify"})


def check_context_id(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    tool_words = set(name_words(tool.label))
    for node in tool.params:
        if node.depth != 1 or node.name is None or _joined(node.name) not in _CONTEXT_IDS:
            continue
        own = set(name_words(node.name)) - {"id", "key"}
        compact = "".join(w for w in name_words(node.name) if w != "id")
        if (own and own <= tool_words) or compact in "".join(name_words(tool.label)):
            continue  # the session or key is the resource this tool manages (get_session, delete_api_key)
        if tool_words & _STORES_CREDENTIALS and _joined(node.name) not in {"conversation_id", "session_id",
                                                                            "idempotency_key", "request_key"}:
            continue  # a tool that registers or checks a credential takes it as its argument
        yield Hit(tool, node.pointer, f"parameter {node.name!r} is something the code already knows "
                  "(a session, idempotency key or credential); a model that fills it in invents or leaks it",
                  "Remove it from the schema and take it from the call context or the server's config.")


def check_principal_id(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.params:
        if node.depth == 1 and node.name is not None and _joined(node.name) in _PRINCIPAL_IDS:
            yield Hit(tool, node.pointer, f"parameter {node.name!r} names a principal; if it is the signed-in "
                      "user the model can put anyone's id here", "Take the signed-in principal from the call "
                      "context; keep the parameter only for acting on other accounts.")


def check_too_many(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    limit = int(config.threshold("max-params"))
    n = len(tool.properties)
    if n > limit:
        yield Hit(tool, f"{tool.schema_pointer}/properties", f"the tool has {n} parameters (more than {limit}); "
                  "the model fills many of them wrong or not at all", "Split the tool by job, or group rarely "
                  "used options into one object.")


def check_required_invalid(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.nodes:
        req = node.schema.get("required")
        if req is None or not is_object(node.schema):
            continue
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
            yield Hit(tool, f"{node.pointer}/required", f"`required` must be a list of names, got {req!r}"[:160],
                      "Write `required` as a list of property names.")
            continue
        props = node.schema.get("properties")
        props = props if isinstance(props, dict) else {}
        absent = [r for r in req if r not in props]
        if absent and node.schema.get("additionalProperties") is not True:
            yield Hit(tool, f"{node.pointer}/required", f"`required` names absent properties {absent}",
                      "Remove them from `required` or define them in `properties`.")


def check_required_missing(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if tool.schema_synthesized:
        return
    schema = tool.schema
    props = tool.properties
    if not props or "required" in schema:
        return
    mandatory = [n for n, p in props.items() if isinstance(p, dict) and "default" not in p
                 and not _SAYS_OPTIONAL.search(folded(str(p.get("description", ""))))]
    if mandatory:
        yield Hit(tool, tool.schema_pointer, f"no `required` list: every parameter is optional, so the model may "
                  f"omit {mandatory[0]!r} and the handler must guess", "List the parameters the tool cannot "
                  "work without in `required`.")


def check_open_object(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if tool.schema_synthesized:
        return
    for node in tool.nodes:
        if not is_object(node.schema):
            continue
        extra = node.schema.get("additionalProperties")
        if extra is None or extra is True:
            where = "the input object" if node.depth == 0 else f"object {node.name or node.pointer!r}"
            yield Hit(tool, node.pointer, f"{where} is open (`additionalProperties` is not false): unknown or "
                      "misspelled keys pass silently", "Set \"additionalProperties\": false (or give it a schema "
                      "when the object is a map).")


def check_untyped(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.params:
        if _TYPED_BY.isdisjoint(node.schema) and not _SAYS_ANY.search(folded(node.description)):
            yield Hit(tool, node.pointer, f"parameter {node.name!r} has no type", "Give it a JSON Schema type.")


def check_nonstandard_type(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.nodes:
        kind = node.schema.get("type")
        if kind is not None and not isinstance(kind, str | list):
            yield Hit(tool, f"{node.pointer}/type", f"`type` is a {type(kind).__name__}, not a type name",
                      "Use a JSON Schema type name (or a list of them).")
            continue
        kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
        for k in kinds:
            if not isinstance(k, str) or k not in JSON_TYPES:
                std = _STANDARD.get(str(k).lower())
                if str(k).lower() == "any":
                    fix = "Drop `type` (any value) or list the types it takes."
                elif std:
                    fix = f"Use \"type\": \"{std}\"."
                else:
                    fix = "Use a JSON Schema type: string, number, integer, boolean, object, array or null."
                where = f"parameter {node.name!r}" if node.name else "the schema at this pointer"
                yield Hit(tool, f"{node.pointer}/type", f"{where} has type {k!r}, which is not a JSON Schema type; "
                          "model APIs reject it or ignore it", fix)


def check_array_items(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.nodes:
        kind = node.schema.get("type")
        if (kind in ("array", "tuple", "Array", "ArrayList") or (isinstance(kind, list) and "array" in kind)) and \
                "items" not in node.schema and "prefixItems" not in node.schema:
            where = f"array {node.name!r}" if node.name else "the array at this pointer"
            yield Hit(tool, node.pointer, f"{where} has no `items` schema; OpenAI rejects it and the model "
                      "guesses the element type", "Add \"items\": {\"type\": ...}.")


_FREE_TEXT: Final = frozenset({"query", "text", "content", "body", "message", "prompt", "comment", "note", "notes",
                               "input", "instructions", "instruction", "markdown", "html", "description", "summary",
                               "question", "q", "search", "keyword", "keywords", "reason", "feedback"})


def check_unbounded_text(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for node in tool.params:
        s = node.schema
        if node.types != {"string"} or not _BOUNDED_BY.isdisjoint(s):
            continue
        assert node.name is not None
        if set(name_words(node.name)) & _FREE_TEXT:
            yield Hit(tool, node.pointer, f"free-text parameter {node.name!r} has no `maxLength`",
                      "Add a `maxLength` that fits what the tool can use.")


def _has_examples(value: Any, depth: int = 0) -> bool:
    """Tool-level `examples` / `input_examples` (OpenAI's wrapper one level down)."""
    if not isinstance(value, dict):
        return False
    if value.get("examples") or value.get("input_examples"):
        return True
    return depth > 0 and _has_examples(value.get("function"), depth - 1)


#: Words that introduce an example, in the tool's or any parameter's description. No `\b` after "e.g.": a
#: boundary between "." and the space that follows it does not exist, so "e.g. 2500" never matched.
_EXAMPLE_WORDS: Final = re.compile(r"\b(?:examples?\b|e\.g\.|for instance\b|such as\b)")
#: Every match of `_EXAMPLE_WORDS` holds one of these: a text with none is not searched from every position.
_EXAMPLE_NEEDLES: Final = ("example", "e.g.", "for instance", "such as")


def example_given(tool: ToolDef) -> bool:
    """Example arguments anywhere: the tool's `examples`, a schema's `examples`/`example`, or an example phrase
    in the tool's or any parameter's description (TP315, and TP208's examples component)."""
    if tool.examples or any(n.schema.get("examples") or n.schema.get("example") for n in tool.nodes) or \
            _has_examples(tool.raw, 1):
        return True
    # One search over every description joined by newlines: no example phrase spans a newline.
    texts = [tool.description_text, *(str(n.schema.get("description") or "") for n in tool.nodes)]
    low = folded("\n".join(texts))
    return any(w in low for w in _EXAMPLE_NEEDLES) and _EXAMPLE_WORDS.search(low) is not None


def check_no_examples(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if tool.schema_synthesized or not tool.properties or example_given(tool):
        return
    yield Hit(tool, tool.schema_pointer, "no example arguments anywhere (tool, schema or description)",
              "Add one or two realistic example calls (`examples`) or 'e.g.' values in parameter descriptions.")


#: An HTTP field-name token (RFC 9110, 1*tchar): what an `x-mcp-header` name must be.
_HTTP_TOKEN: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
#: The types an `x-mcp-header` property may have: the spec's string, integer and boolean, plus number, which
#: the conformance suite annotates and the TypeScript and Ruby SDKs accept.
_HEADER_TYPES: Final = frozenset({"string", "integer", "boolean", "number"})


def _header_problems(schema: Any, root: str) -> Iterator[tuple[str, str]]:
    """(pointer, problem) for each `x-mcp-header` that MCP 2026-07-28 clients reject: a name that is not an
    HTTP token or repeats another (case-insensitively), a property that is not a primitive, or one reached
    through anything but `properties` (items, anyOf, ...). Iterative, and each node once: hostile schemas
    nest thousands deep or refer to themselves."""
    seen: dict[str, str] = {}
    visited: set[int] = set()
    stack: list[tuple[Any, str, bool]] = [(schema, root, True)]
    while stack:
        node, pointer, reachable = stack.pop()
        if not isinstance(node, (dict, list)) or id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, list):
            stack.extend(reversed([(item, f"{pointer}/{i}", False) for i, item in enumerate(node)]))
            continue
        if "x-mcp-header" in node:
            problem = _header_problem(node, reachable, seen, pointer)
            if problem is not None:
                yield pointer, problem
        children: list[tuple[Any, str, bool]] = []
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                children += [(sub, f"{pointer}/properties/{prop}", reachable) for prop, sub in value.items()]
            elif key != "x-mcp-header":
                children.append((value, f"{pointer}/{key}", False))
        stack.extend(reversed(children))  # popped in document order: the first of two equal names is kept


def _header_problem(node: dict[str, Any], reachable: bool, seen: dict[str, str], pointer: str) -> str | None:
    name, kind = node["x-mcp-header"], node.get("type")
    if not isinstance(name, str) or not _HTTP_TOKEN.match(name):
        return f"x-mcp-header {name!r} is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~)"
    if not reachable:
        return f"x-mcp-header {name!r} is not reachable through `properties` alone"
    if kind not in _HEADER_TYPES:
        return f"x-mcp-header {name!r} is on a {kind!r} property (string, integer or boolean only)"
    if name.lower() in seen:
        return f"x-mcp-header {name!r} repeats the one at {seen[name.lower()]} (names are case-insensitive)"
    seen[name.lower()] = pointer
    return None


def _has_header(schema: Any) -> bool:
    """Whether any object in the schema carries `x-mcp-header`: one lean pass (no pointers), so the many
    schemas without one skip the full walk. Each node once, like the walk."""
    visited: set[int] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, dict) and "x-mcp-header" in node:
            return True
        stack += [v for v in (node.values() if isinstance(node, dict) else node) if isinstance(v, (dict, list))]
    return False


def check_mcp_header(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if tool.schema_synthesized or not isinstance(tool.input_schema, dict) or not _has_header(tool.input_schema):
        return
    for pointer, problem in _header_problems(tool.input_schema, tool.schema_pointer):
        yield Hit(tool, pointer, f"{problem}: clients of MCP 2026-07-28 drop the whole tool from tools/list",
                  "Put x-mcp-header only on top-level or nested `properties` of type string, integer or boolean, "
                  "with a unique HTTP token name.")


def check_schema_not_object(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if tool.schema_synthesized:
        return
    schema = tool.input_schema
    if schema is None:
        yield Hit(tool, tool.schema_pointer, "the tool has no input schema; MCP requires one",
                  "Publish {\"type\": \"object\", \"properties\": {...}, \"additionalProperties\": false}.")
    elif not isinstance(schema, dict):
        yield Hit(tool, tool.schema_pointer, f"the input schema is a {type(schema).__name__}, not an object schema",
                  "Publish a JSON Schema object.")
    elif schema.get("type") not in ("object", "dict"):
        yield Hit(tool, tool.schema_pointer, f"the input schema's type is {schema.get('type')!r}, not 'object'",
                  "Set \"type\": \"object\" at the top of the input schema.")


RULES: Final = (
    Rule("TP301", "param-no-description", "warning", "A parameter has no description.",
         "The model fills it from its name alone.", "Describe it: meaning, unit or format, example.",
         tool_check=check_no_description, family="params"),
    Rule("TP302", "param-quantity-no-unit", "warning", "A numeric quantity has no unit in its name or description "
         "(counts, indices, limits and pages are exempt).",
         "The model guesses the unit (seconds or milliseconds, kg or quintal).",
         "Put the unit in the name (quantity_kg) and conversions in the description.",
         tool_check=check_quantity_unit, family="params"),
    Rule("TP303", "param-enum-in-prose", "warning", "A closed set of values is written in prose, not as an enum.",
         "Prose cannot be validated, and the model paraphrases values ('grade a', 'A grade').",
         "Use `enum`.", tool_check=check_enum_in_prose, family="params"),
    Rule("TP304", "param-date-no-format", "warning", "A date or time parameter has no `format` or `pattern`.",
         "The model sends 'Thursday' or '10/23'; one format avoids guessing.",
         "Add format: date or date-time.", tool_check=check_date_format, family="params"),
    Rule("TP305", "param-default-schema-only", "warning", "A `default` is stated only in the schema.",
         "Many clients drop `default` (OpenAI strict mode forbids it), so the model never sees it.",
         "State the default in the description; apply it in the handler.", tool_check=check_default_schema_only,
         family="params"),
    Rule("TP306", "param-context-id", "error", "A parameter asks the model for something the code knows "
         "(conversation, session or idempotency key, API key, token).",
         "The model invents or leaks it; a retry with an invented key repeats the write.",
         "Take it from the call context or server configuration.", tool_check=check_context_id, family="params"),
    Rule("TP307", "param-principal-id", "advice", "A parameter asks the model for a principal id (user, buyer, "
         "customer, account).", "If it is the signed-in principal, the model can act as anyone.",
         "Take the signed-in principal from the call context.", tool_check=check_principal_id, family="params",
         default_on=False),
    Rule("TP308", "params-too-many", "warning", "The tool has more top-level parameters than the threshold.",
         "Accuracy of filled arguments falls with their number.", "Split the tool or group options.",
         tool_check=check_too_many, family="params"),
    Rule("TP309", "required-invalid", "error", "`required` is malformed or names absent properties.",
         "Validators and clients disagree about such schemas; the model can never satisfy them.",
         "Fix `required`.", tool_check=check_required_invalid, family="params"),
    Rule("TP310", "required-missing", "warning", "The schema has parameters but no `required` list.",
         "Everything is optional, so the model may omit what the tool needs.", "List the required parameters.",
         tool_check=check_required_missing, family="params", default_on=False),
    Rule("TP311", "object-open", "warning", "An object schema does not set `additionalProperties: false`.",
         "Misspelled or invented keys pass validation and are silently ignored.",
         "Set additionalProperties: false at every level.", tool_check=check_open_object, family="params"),
    Rule("TP312", "param-untyped", "warning", "A parameter has no type.", "Any value validates.",
         "Give it a type.", tool_check=check_untyped, family="params", default_on=False),
    Rule("TP313", "param-nonstandard-type", "error", "A type is not a JSON Schema type (dict, float, tuple, any, "
         "String, ...).", "Model APIs reject the schema or treat the type as absent.",
         "Use the JSON Schema type names.", tool_check=check_nonstandard_type, family="params"),
    Rule("TP314", "param-unbounded-text", "advice", "A free-text parameter (query, text, content, message, ...) has "
         "no maxLength.", "Unbounded text invites pasted documents and runaway cost.", "Add maxLength.",
         tool_check=check_unbounded_text, family="params"),
    Rule("TP315", "no-examples", "advice", "No example arguments anywhere.",
         "One realistic example call fixes formats better than a paragraph.", "Add examples.",
         tool_check=check_no_examples, family="params"),
    Rule("TP316", "array-no-items", "warning", "An array has no `items` schema.",
         "OpenAI rejects such schemas; the model guesses the element type.", "Add items.",
         tool_check=check_array_items, family="params"),
    Rule("TP317", "schema-not-object", "error", "The input schema is missing or not an object schema.",
         "MCP and the model APIs require an object schema for arguments.", "Publish an object schema.",
         tool_check=check_schema_not_object, family="params"),
    Rule("TP318", "mcp-header-invalid", "error", "An `x-mcp-header` annotation breaks an MCP 2026-07-28 constraint "
         "(HTTP token name, unique case-insensitively, primitive type, reached through `properties` only).",
         "Conforming Streamable HTTP clients drop the whole tool from tools/list and only log a warning.",
         "Fix the annotation.", tool_check=check_mcp_header, family="params"),
)
