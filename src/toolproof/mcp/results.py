"""An upstream `CallToolResult` as the value a tool returns, or the `ToolError` it raises.

Order: a toolproof envelope (in `structuredContent`, or as JSON text) is kept as it is; an error with RFC 9457
Problem Details in `structuredContent` is read by status; any other error text goes through the
`ErrorMapping`. A success is its `structuredContent`, else its text, else its content blocks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from ..contract.classify import classify_problem
from ..contract.envelope import Envelope, MalformedEnvelope
from .errormap import ErrorMapping


def _as_envelope(data: Any) -> Envelope | None:
    if not (isinstance(data, Mapping) and "ok" in data and "meta" in data):
        return None
    try:
        return Envelope.from_dict(data)
    except MalformedEnvelope:
        return None


def _texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def _json_text_envelope(texts: list[str]) -> Envelope | None:
    if len(texts) != 1 or not texts[0].lstrip().startswith("{"):
        return None
    try:
        data = json.loads(texts[0])
    except (ValueError, RecursionError):
        return None
    return _as_envelope(data)


def _looks_like_problem(data: Any) -> bool:
    return isinstance(data, Mapping) and isinstance(data.get("status"), int) and (
        "type" in data or "title" in data or "detail" in data
    )


def interpret(result: types.CallToolResult, mapping: ErrorMapping, *, tool: str) -> Any:
    """The tool's value, or raise the `ToolError` the upstream's failure means (see the module docstring)."""
    texts = _texts(result)
    envelope = _as_envelope(result.structured_content) or _json_text_envelope(texts)
    if envelope is not None:
        if envelope.ok:
            return envelope.result
        assert envelope.error is not None
        raise envelope.error.to_exception()
    if result.is_error:
        if _looks_like_problem(result.structured_content):
            raise classify_problem(result.structured_content)
        raise mapping.classify(" ".join(texts), tool=tool)
    if result.structured_content is not None:
        return result.structured_content
    if texts and len(texts) == len(result.content):
        return texts[0] if len(texts) == 1 else texts
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]


def unwrap_output_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The result schema inside a toolproof envelope `outputSchema`, else the schema itself.

    A toolproof server's schema is the envelope (`oneOf` success/failure, or the success branch alone);
    the imported tool's own result is the success branch's `result`, with the root `$defs` it refers to.
    """
    if schema is None:
        return None
    branches = schema.get("oneOf")
    success = branches[0] if isinstance(branches, list) and branches else schema
    props = success.get("properties") if isinstance(success, Mapping) else None
    if isinstance(props, Mapping) and {"ok", "meta"} <= set(props) and "$defs" in schema:
        inner = props.get("result")
        if not isinstance(inner, Mapping) or not inner:
            return None
        own = {k[len("result__"):]: v for k, v in schema["$defs"].items() if k.startswith("result__")}
        out = dict(inner)
        if own:
            text = json.dumps(out).replace('"#/$defs/result__', '"#/$defs/')
            out = {**json.loads(text), "$defs": {k: json.loads(json.dumps(v).replace('"#/$defs/result__', '"#/$defs/'))
                                                  for k, v in own.items()}}
        return out
    return dict(schema)
