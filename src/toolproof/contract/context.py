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


@dataclass(frozen=True, init=False)
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
        # Frozen, but built with one dict update: a frozen dataclass's generated __init__ costs ~1 µs here,
        # on every call's hot path (tests check that the fields and this signature agree).
        self.__dict__.update(
            conversation_id=conversation_id, principal=principal, call_id=call_id, run_id=run_id,
            occurrence=occurrence, idempotency_key=idempotency_key, attempt=attempt,
            metadata=EMPTY_MAPPING if metadata is None else metadata, session_id=session_id,
        )

    def with_updates(self, **changes: Any) -> CallContext:
        return replace(self, **changes)


_new: Final = object.__new__


def fresh_context(call_id: str) -> CallContext:
    """`CallContext(call_id=call_id, attempt=1)`, the context of every call made without one, built directly:
    0.59 -> 0.24 µs (CPU time, best of 25), on every such call's hot path (a test checks they are equal)."""
    ctx: CallContext = _new(CallContext)
    d = ctx.__dict__
    d.update(_FRESH)  # in field order, as __init__ does: instances share one key table
    d["call_id"] = call_id
    return ctx


_FRESH: Final = {"conversation_id": None, "principal": None, "call_id": None, "run_id": None, "occurrence": 0,
                 "idempotency_key": None, "attempt": 1, "metadata": EMPTY_MAPPING, "session_id": None}
