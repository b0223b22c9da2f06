"""What every adapter shares: a context from the framework's ids, and the envelope as the model reads it."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from ..contract._context import CallContext
from ..contract._envelope import Envelope

#: The signed-in user of a call: a fixed id, or a function of the framework's context of the call.
Principal: TypeAlias = str | Callable[[Any], str | None] | None


def resolve_principal(principal: Principal, framework_ctx: Any) -> str | None:
    """The principal option applied to the framework's context of this call."""
    if principal is None or isinstance(principal, str):
        return principal
    return principal(framework_ctx)


def call_context(
    conversation_id: str | None,
    principal: str | None,
    *,
    run_id: str | None = None,
    tool_call_id: str | None = None,
) -> CallContext:
    """The `CallContext` of one framework tool call (the framework's own call id kept in `metadata`)."""
    metadata = {"tool_call_id": tool_call_id} if tool_call_id else {}
    return CallContext(conversation_id=conversation_id, principal=principal, run_id=run_id, metadata=metadata)


def field_of(source: Any, name: str) -> str | None:
    """A non-empty string `name` of a mapping or an object, else None (duck-typed framework contexts)."""
    if source is None:
        return None
    value = source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)
    return value if isinstance(value, str) and value else None


def envelope_text(envelope: Envelope) -> str:
    """The envelope as the model reads it: the whole JSON object, success or failure."""
    return envelope.to_json()


def load_arguments(raw: str | bytes | None) -> Any:
    """Raw JSON arguments, parsed without coercion; text that is not JSON is passed on as it is.

    The runner answers text it cannot parse with `invalid_argument` / `INVALID_JSON`, so nothing is lost.
    """
    if raw is None or raw in ("", b""):
        return {}
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw.decode(errors="replace") if isinstance(raw, bytes) else raw
