"""An upstream `CallToolResult` as the value a tool returns, or the `ToolError` it raises.

Trusted upstream, in order: a toolproof envelope (in `structuredContent`, or as JSON text) is kept as it is; an
error with RFC 9457 Problem Details in `structuredContent` is read by status; any other error text goes through
the `ErrorMapping`. A success is its `structuredContent`, else its text, else its content blocks.

Untrusted upstream: nothing it sends is taken as toolproof's own. Of a success envelope only `result` is
kept; a failure envelope (or one that says `ok: false` without `isError`) is data, never unwrapped; an
error becomes toolproof's error (class by status or by the mapping; structured content it cannot read is the
mapping's default class) with the upstream's words quoted, neutralised and capped in `error.state`; a
success keeps its shape with every string neutralised (see `quote.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from ..contract._classify import classify_problem
from ..contract._envelope import Envelope, MalformedEnvelope
from ..contract._errors import ErrorClass
from ._errormap import ErrorMapping, untrusted_error
from ._quote import neutralise_value


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
    text = texts[0]
    if not ('"ok"' in text and '"meta"' in text) and "\\u" not in text:
        return None  # no key `ok` or no key `meta` (unless spelled with \u escapes): not an envelope, nothing to parse
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return _as_envelope(data)


def _looks_like_problem(data: Any) -> bool:
    return isinstance(data, Mapping) and isinstance(data.get("status"), int) and (
        "type" in data or "title" in data or "detail" in data
    )


def interpret(result: types.CallToolResult, mapping: ErrorMapping, *, tool: str, trusted: bool = False) -> Any:
    """The tool's value, or raise the `ToolError` the upstream's failure means (see the module docstring)."""
    if not trusted:
        return _interpret_untrusted(result, mapping, tool=tool)
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
    return _success_value(result, texts)


def _success_value(result: types.CallToolResult, texts: list[str]) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    if texts and len(texts) == len(result.content):
        return texts[0] if len(texts) == 1 else texts
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]


def _interpret_untrusted(result: types.CallToolResult, mapping: ErrorMapping, *, tool: str) -> Any:
    texts = _texts(result)
    envelope = _as_envelope(result.structured_content) or _json_text_envelope(texts)
    if not result.is_error and (envelope is None or envelope.ok):
        # A success envelope gives only its `result`; its meta (an idempotency key, say) is dropped.
        return neutralise_value(envelope.result if envelope is not None else _success_value(result, texts))
    structured = result.structured_content
    words = " ".join(texts) or (json.dumps(structured, default=str) if structured is not None else "")
    decided: tuple[ErrorClass, str, float | None]
    if _looks_like_problem(structured):
        assert structured is not None  # only the status is read: its type, code and extensions are the upstream's
        status = structured["status"]
        decided = (classify_problem({"status": status}).error_class, f"HTTP_{status}", None)
    elif structured is not None or _json_object(texts):
        # Structured text (a forged envelope, say) is not prose: its class words are not read as a class.
        decided = (mapping.default, "UPSTREAM_" + mapping.default.value.upper(), None)
    else:
        decided = mapping.decide(" ".join(words.split()))
    raise untrusted_error(words or "(the upstream gave no error text)", tool=tool, decided=decided)


def _json_object(texts: list[str]) -> bool:
    return len(texts) == 1 and texts[0].lstrip().startswith(("{", "["))


def unwrap_output_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The result schema inside a toolproof envelope `outputSchema`, else the schema itself.

    A toolproof server's schema is the envelope (`oneOf` success/failure, or the success branch alone with
    `$defs`); the imported tool's own result is the success branch's `result`, with the root `$defs` it refers
    to (`result__NAME`).
    """
    if schema is None:
        return None
    branches = schema.get("oneOf")
    success = branches[0] if isinstance(branches, list) and branches else schema
    props = success.get("properties") if isinstance(success, Mapping) else None
    if isinstance(props, Mapping) and {"ok", "meta"} <= set(props) and ("$defs" in schema
                                                                         or _envelope_branches(branches)):
        inner = props.get("result")
        if not isinstance(inner, Mapping) or not inner:
            return None
        root_defs = schema.get("$defs")
        own = {k[len("result__"):]: v for k, v in (root_defs if isinstance(root_defs, Mapping) else {}).items()
               if k.startswith("result__")}
        out = dict(inner)
        if own:
            text = json.dumps(out).replace('"#/$defs/result__', '"#/$defs/')
            out = {**json.loads(text), "$defs": {k: json.loads(json.dumps(v).replace('"#/$defs/result__', '"#/$defs/'))
                                                  for k, v in own.items()}}
        return out
    return dict(schema)


def _envelope_branches(branches: Any) -> bool:
    """A served envelope's `oneOf`: a success branch (`ok: true`) and a failure branch (`ok: false`)."""
    if not isinstance(branches, list) or len(branches) != 2:
        return False
    oks = [b.get("properties", {}).get("ok") if isinstance(b, Mapping) else None for b in branches]
    return oks == [{"const": True}, {"const": False}]
