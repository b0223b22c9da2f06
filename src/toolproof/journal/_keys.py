"""Idempotency keys: built by our code from the call context, never taken from the model.

The key names one logical write: who (conversation, principal), what (tool), which operation (the
arguments named by the tool's `operation_keys`, defaults applied) and which occurrence (0 unless code,
after a person confirmed, asks for a second identical action). The operation id leaves the arguments
out, so "the same operation with different arguments" can be recognised; the fingerprint covers every
argument, so a changed payload under the same key is caught (IETF draft: never reuse a key with a
different payload).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..contract._canonical import canonical_json, digest, not_canonical
from ..contract._context import CallContext
from ..contract._errors import InvalidArgument
from ..contract._tool import Tool

KEY_PREFIX: Final = "tp1_"
_KEY_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class KeyParts:
    """What the journal needs to know about one write: its key, its operation and its payload."""

    key: str  # conversation + principal + tool + operation arguments + occurrence
    operation_id: str  # conversation + principal + tool + occurrence (arguments left out)
    fingerprint: str  # every argument, defaults applied


def idempotency_key(
    tool: str,
    arguments: Mapping[str, Any],
    context: CallContext | None = None,
    *,
    operation_keys: Sequence[str] | None = None,
) -> str:
    """The idempotency key of a write (see `key_parts`)."""
    return key_parts(tool, arguments, context, operation_keys=operation_keys).key


def key_parts(
    tool: str,
    arguments: Mapping[str, Any],
    context: CallContext | None = None,
    *,
    operation_keys: Sequence[str] | None = None,
) -> KeyParts:
    """Key, operation id and fingerprint of a write. `context.idempotency_key` (a key from anyone) is ignored.

    `operation_keys` names the arguments that identify the operation (None: all of them); an argument
    that is absent counts as null, so leaving out an optional argument and sending null build one key.
    """
    ctx = context or CallContext()
    occurrence = ctx.occurrence
    if isinstance(occurrence, bool) or not isinstance(occurrence, int) or occurrence < 0:
        raise InvalidArgument(
            f"occurrence must be a non-negative integer, got {occurrence!r}.",
            code="BAD_OCCURRENCE",
            field="occurrence",
            received=repr(occurrence),
            hint="Code sets occurrence (0 by default; 1, 2, ... for a confirmed repeat), never the model.",
        )
    if not isinstance(arguments, Mapping):
        raise not_canonical(f"a {type(arguments).__name__} where an object was expected", "NOT_AN_OBJECT")
    who = canonical_json({"conversation": ctx.conversation_id, "principal": ctx.principal, "tool": tool,
                          "occurrence": occurrence, "v": _KEY_VERSION})
    payload = canonical_json(arguments)
    selected = payload if operation_keys is None else canonical_json(
        {name: arguments.get(name) for name in operation_keys})
    # canonical_json({**who, "arguments": selected}) without walking the arguments again: "arguments" sorts first
    # The operation is who + the operation_keys arguments: "same operation, other arguments" means the
    # arguments outside operation_keys changed. With operation_keys=None every argument names the operation.
    operation = digest('{"arguments":' + selected + "," + who[1:])
    return KeyParts(key=KEY_PREFIX + operation, operation_id=operation, fingerprint=digest(payload))


def key_parts_for(tool: Tool, arguments: Mapping[str, Any], context: CallContext | None) -> KeyParts:
    """`key_parts` for a `Tool`: its defaults applied first, so leaving out `grade="A"` is the same order."""
    defaults: Mapping[str, Any] = getattr(tool, "_defaults", None) or {}
    merged = {**defaults, **arguments} if defaults else dict(arguments)
    return key_parts(tool.name, merged, context, operation_keys=tool.operation_keys)
