"""Java and JavaScript argument literals, as BFCL's Java/JS categories send them.

In those categories a model writes every argument as a string of source code (`"true"`, `"5L"`,
`"new int[]{1, 2}"`, `"{a: 1}"`); BFCL converts the string by the declared type before comparing, and a
string that does not parse stays a string. The decoders follow BFCL's published converter rules so the
scorer agrees with its checker; the encoders write a Python value as the literal a model would send.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from ._scoring import Decode, LiteralParam

JAVA_TYPES: Final[Mapping[str, type]] = {
    "byte": int, "short": int, "integer": int, "float": float, "double": float, "long": int, "boolean": bool,
    "char": str, "Array": list, "ArrayList": list, "Set": set, "HashMap": dict, "Hashtable": dict,
    "Queue": list, "Stack": list, "String": str, "any": str,
}
JS_TYPES: Final[Mapping[str, type]] = {
    "String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool, "dict": dict,
    "array": list, "any": str,
}
_NESTED: Final = frozenset({"Array", "ArrayList", "array"})
_INT: Final = re.compile(r"^-?\d+$")
_JAVA_FLOAT: Final = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$")
_JAVA_DOUBLE: Final = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$")
_JAVA_LONG: Final = re.compile(r"^-?\d+[lL]$")

Encoder = Callable[[Any, Mapping[str, Any]], Any]


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _java_value(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _JAVA_LONG.match(text):
        return int(text[:-1])
    if _JAVA_FLOAT.match(text):
        return float(text[:-1])
    return _number(text)


def java_convert(text: str, kind: str, nested: str | None = None) -> Any:
    """BFCL's Java conversion of one literal by its declared type."""
    if kind in ("byte", "short", "integer"):
        return int(text) if _INT.match(text) else text
    if kind == "float":
        return float(text[:-1]) if _JAVA_FLOAT.match(text) else text
    if kind == "double":
        return float(text) if _JAVA_DOUBLE.match(text) else text
    if kind == "long":
        return int(text[:-1]) if _JAVA_LONG.match(text) else text
    if kind == "boolean":
        return text == "true" if text in ("true", "false") else text
    if kind == "Array":
        match = re.search(r"new\s+\w+\[\]\s*\{(.*?)\}", text)
        if not match:
            return text
        parts = [x.strip() for x in match.group(1).split(",") if x.strip()]
        return [java_convert(x, nested) if nested else _java_value(x) for x in parts]
    if kind == "ArrayList":
        return _java_arraylist(text, nested)
    if kind == "HashMap":
        match = re.search(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", text, re.DOTALL)
        if match:
            return {k: _java_value(v.strip()) for k, v in re.findall(r"put\(\"(.*?)\",\s*(.*?)\)", match.group(1))}
        return {} if re.search(r"new\s+HashMap<.*?>\s*\(\)", text) else text
    if kind in ("String", "any", "char"):
        return text
    raise ValueError(f"unsupported Java type {kind!r}")


def _java_element(text: str, nested: str | None) -> Any:
    if nested in ("char", "String"):
        return text[1:-1]
    return java_convert(text, nested) if nested else _java_value(text)


def _java_arraylist(text: str, nested: str | None) -> Any:
    match = re.search(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)", text)
    if match:
        return [_java_element(x.strip(), nested) for x in match.group(1).split(",")]
    match = re.search(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", text, re.DOTALL)
    if match:
        return [_java_element(x.strip(), nested) for x in re.findall(r"add\((.+?)\)", match.group(1))]
    return [] if re.search(r"new\s+ArrayList<\w*>\(\)", text) else text


def _js_value(text: str) -> Any:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return _number(text)


def js_convert(text: str, kind: str, nested: str | None = None) -> Any:
    """BFCL's JavaScript conversion of one literal by its declared type."""
    if kind == "String":
        quoted = (text.startswith('"') and text.endswith('"')) or (text.startswith("'") and text.endswith("'"))
        return text[1:-1] if quoted else text
    if kind == "integer":
        return int(text) if _INT.match(text) else text
    if kind == "float":
        return float(text) if re.match(r"^-?\d+(\.\d+)?$", text) else text
    if kind == "Bigint":
        return int(text[:-1]) if re.match(r"^-?\d+n$", text) else text
    if kind == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if kind == "array":
        return _js_array(text.strip(), nested)
    if kind == "dict":
        return _js_dict(text.strip())
    if kind == "any":
        return text
    raise ValueError(f"unsupported JavaScript type {kind!r}")


def _js_array(code: str, nested: str | None) -> Any:
    two_d = re.match(r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)", code)
    try:
        if two_d:
            rows = []
            for idx, inner in enumerate(re.findall(r"\[(.*?)\]", two_d.group(0))):
                inner = inner.strip()
                if idx == 0 and inner.startswith("["):
                    inner = inner[1:]
                rows.append([_js_value(e.strip()) for e in inner.split(",")])
            return rows
        match = re.match(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)", code)
        if not match:
            return code
        body = match.group(1) if match.group(1) is not None else match.group(2)
        body = (body or "").strip()
        elements = body.split(",") if body else []
        if nested:
            return [js_convert(e.strip(), nested) for e in elements]
        return [_js_value(e.strip()) for e in elements]
    except (ValueError, IndexError):
        return code


def _js_dict(code: str) -> Any:
    if code == "{}":
        return {}
    match = re.match(r"\{(.*?)\}", code)
    if not match:
        return code
    out: dict[str, Any] = {}
    for key, value in re.findall(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", match.group(1)):
        key = key.strip().strip("'\"")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            out[key] = _js_array(value, None)
        elif value.startswith("{") and value.endswith("}"):
            out[key] = _js_dict(value)
        else:
            out[key] = _js_value(value.strip("'\""))
    return out


def _decoder(types: Mapping[str, type], convert: Callable[[str, str, str | None], Any], label: str) -> Decode:
    not_a_literal = f"{label} literal as a string"

    def decode(prop: Mapping[str, Any]) -> LiteralParam | None:
        kind = str(prop.get("type"))
        if kind not in types:
            return None
        nested_kind: str | None = None
        nested_type: type | None = None
        if kind in _NESTED:
            items = prop.get("items")
            nested_kind = str(items.get("type")) if isinstance(items, Mapping) else None
            nested_type = types.get(nested_kind) if nested_kind else None
        return LiteralParam(types[kind], nested_type, lambda text: convert(text, kind, nested_kind), not_a_literal)

    return decode


def decoder_for(language: str) -> Decode | None:
    if language == "java":
        return _decoder(JAVA_TYPES, java_convert, "Java")
    if language == "javascript":
        return _decoder(JS_TYPES, js_convert, "JavaScript")
    return None


# ------------------------------------------------------------------------------------------ encoders


def _java_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def encode_java(value: Any, prop: Mapping[str, Any]) -> Any:
    kind = prop.get("type")
    items = prop.get("items")
    nested = items.get("type") if isinstance(items, Mapping) else None
    if kind == "boolean" and isinstance(value, bool):
        return "true" if value else "false"
    if kind == "long" and type(value) is int:
        return f"{value}L"
    if kind == "float" and isinstance(value, int | float):
        return f"{float(value)}f"
    if kind == "Array" and isinstance(value, list):
        return f"new {nested or 'Object'}[]{{{', '.join(_encode_nested_java(v, nested) for v in value)}}}"
    if kind == "ArrayList" and isinstance(value, list):
        return f"new ArrayList<>(Arrays.asList({', '.join(_encode_list_item_java(v, nested) for v in value)}))"
    if kind == "HashMap" and isinstance(value, Mapping):
        puts = " ".join(f'put("{k}", {_java_literal(v[0] if isinstance(v, list) and v else v)});'
                        for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if not isinstance(value, list | dict) else value


def _encode_nested_java(value: Any, nested: str | None) -> str:
    if nested == "long" and type(value) is int:
        return f"{value}L"
    if nested == "float":
        return f"{float(value)}f"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _encode_list_item_java(value: Any, nested: str | None) -> str:
    if nested in ("String", "char"):
        return f'"{value}"'
    return _encode_nested_java(value, nested)


def _js_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, list):
        return "[" + ", ".join(_js_literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_js_literal(v[0] if isinstance(v, list) and v else v)}"
                               for k, v in value.items()) + "}"
    return str(value)


def encode_js(value: Any, prop: Mapping[str, Any]) -> Any:
    kind = prop.get("type")
    if kind in ("array", "dict"):
        return value if isinstance(value, str) else _js_literal(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if not isinstance(value, list | dict) else _js_literal(value)


def _identity(value: Any, prop: Mapping[str, Any]) -> Any:
    return value


def encoder_for(language: str) -> Encoder:
    if language == "java":
        return encode_java
    if language == "javascript":
        return encode_js
    return _identity
