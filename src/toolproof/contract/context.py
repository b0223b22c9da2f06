"""What the calling code knows about a call: who, in which conversation and run. Never from the model."""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Final

EMPTY_MAPPING: Mapping[str, Any] = MappingProxyType({})


def new_call_id() -> str:
    """A random call id (96 bits, hex)."""
    return os.urandom(12).hex()


class CallIds:
    """Call ids without a system call per call: a random 60-bit prefix per source, then a counter.

    Unique across processes (the prefix) and within one (the counter); about 10x cheaper than urandom. The
    counter starts at 2**32, so `hex()` gives its 9 digits with no padding to format (24 hex characters in
    all, 25 after 64 billion calls): 0.31 -> 0.19 µs against an f-string (CPU time, best of 7), every call.
    """

    __slots__ = ("_counter", "_prefix")

    def __init__(self) -> None:
        self._prefix = os.urandom(8).hex()[:15]
        self._counter = itertools.count(1 << 32)

    def __call__(self) -> str:
        return self._prefix + hex(next(self._counter))[2:]


@dataclass(frozen=True, init=False, slots=True)
class CallContext:
    """Ids the code knows: injected into handlers that ask for it, never part of a tool's schema.

    `occurrence` numbers intentional repeats of the same write (set by code after a person confirmed);
    `idempotency_key` is filled in by the runner for writes, so the owner of the effect can enforce it.
    `conversation_id` None means the conversation is unknown (docs/idempotency.md, "Who is asking").
    `session_id` names a transport's session or process (an MCP session, a stdio server's process): it groups
    calls for the loop guard, but it is never a conversation and never part of an idempotency key.
    """

    conversation_id: str | None
    principal: str | None
    call_id: str | None
    run_id: str | None
    occurrence: int
    idempotency_key: str | None
    attempt: int
    metadata: Mapping[str, Any]
    session_id: str | None

    def __init__(
        self,
        conversation_id: str | None = None,
        principal: str | None = None,
        call_id: str | None = None,
        run_id: str | None = None,
        occurrence: int = 0,
        idempotency_key: str | None = None,
        attempt: int = 0,
        metadata: Mapping[str, Any] | None = None,
        session_id: str | None = None,
    ) -> None:
        set_ = object.__setattr__  # as a frozen dataclass's own __init__ does
        set_(self, "conversation_id", conversation_id)
        set_(self, "principal", principal)
        set_(self, "call_id", call_id)
        set_(self, "run_id", run_id)
        set_(self, "occurrence", occurrence)
        set_(self, "idempotency_key", idempotency_key)
        set_(self, "attempt", attempt)
        set_(self, "metadata", EMPTY_MAPPING if metadata is None else metadata)
        set_(self, "session_id", session_id)

    def with_updates(self, **changes: Any) -> CallContext:
        return replace(self, **changes)


class _ContextSlots:
    """`CallContext`'s slots without its frozen `__setattr__`: the runner's contexts are filled here, then become
    one (`__class__`: the layouts match). 1.0 -> 0.25 µs against the frozen `__init__` (CPU time, best of 15)."""

    __slots__ = CallContext.__slots__


_new: Final = object.__new__


def fresh_context(call_id: str) -> CallContext:
    """`CallContext(call_id=call_id, attempt=1)`: the context of every call made without one."""
    c: Any = _new(_ContextSlots)  # Any: a twin, until it becomes a CallContext
    c.conversation_id = c.principal = c.run_id = c.idempotency_key = c.session_id = None
    c.occurrence = 0
    c.attempt = 1
    c.metadata = EMPTY_MAPPING
    c.call_id = call_id
    c.__class__ = CallContext
    done: CallContext = c
    return done


def with_call(context: CallContext, call_id: str) -> CallContext:
    """The caller's context as one call's: `call_id` (when it had none) and attempt 1 (when it had 0) filled in."""
    c: Any = _new(_ContextSlots)  # Any: a twin, until it becomes a CallContext
    c.conversation_id = context.conversation_id
    c.principal = context.principal
    c.call_id = context.call_id or call_id
    c.run_id = context.run_id
    c.occurrence = context.occurrence
    c.idempotency_key = context.idempotency_key
    c.attempt = context.attempt or 1
    c.metadata = context.metadata
    c.session_id = context.session_id
    c.__class__ = CallContext
    done: CallContext = c
    return done
