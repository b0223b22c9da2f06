"""Counting effects: the tool's own function, wrapped, notes every entry that returned without raising.

The notes go to a ledger file (one JSON line each, flushed to disk before the function's reply goes on), so
a worker killed right after its effect has still counted it, and a second process appends to the same file.
A tool declared `idempotent` says a repeat changes nothing: its entries under one idempotency key (or, when
the function sees no key, with the same arguments) count as one effect; every other entry is one effect.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import threading
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic

from ..contract._context import CallContext
from ..contract._errors import RateLimited
from ..contract._tool import Tool
from ._arguments import sample
from ._scenarios import Fault

__all__ = ["Ledger", "ReplyLost", "counting_method", "instrument", "pretended"]


class ReplyLost(ConnectionResetError):
    """The staged fault: the effect was applied and the connection dropped before its reply."""


class Ledger:
    """The effects of one scenario, in a file (shared by the processes a scenario starts)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries = 0

    def enter(self) -> int:
        """The number of this entry into the function, in this process (1 first)."""
        with self._lock:
            self._entries += 1
            return self._entries

    def returned(self, identity: str) -> None:
        line = json.dumps({"identity": identity, "at": time.time(), "pid": os.getpid()}) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def rows(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        text = self.path.read_text(encoding="utf-8")
        complete = text[: text.rfind("\n") + 1]  # a line another process is still writing is not read yet
        return [json.loads(line) for line in complete.splitlines() if line.strip()]

    def entries(self) -> int:
        """Entries that returned without raising, in every process."""
        return len(self.rows())

    def effects(self, tool: Tool) -> int:
        rows = self.rows()
        return len({r["identity"] for r in rows}) if tool.idempotent else len(rows)


def counting_method(tool: Tool) -> str:
    """How `Ledger.effects` counts this tool's effects, said in the report."""
    if tool.idempotent:
        return "instrumented body; declared idempotent: entries under one key (else same arguments) count once"
    return "instrumented body: each entry that returned without raising"


def instrument(tool: Tool, ledger: Ledger, fault: Fault, *, timeout_s: float | None = None) -> Tool:
    """The same tool (schema, policy) whose function counts its effects and stages `fault`."""
    inner = tool.handler

    def skipped(entry: int) -> bool:
        return fault.on(entry) == "skip_effect"

    def before(entry: int) -> None:
        if fault.on(entry) == "rate_limit_before":
            raise RateLimited("429 Too Many Requests (staged by toolproof chaos)", code="HTTP_429",
                              retry_after_s=fault.seconds)

    def after(entry: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> float:
        ledger.returned(_identity(args, kwargs))
        kind = fault.on(entry)
        if kind == "raise_after":
            raise ReplyLost("connection reset after the effect was applied (staged by toolproof chaos)")
        return fault.seconds if kind in ("hang_after", "hold_after") else 0.0

    handler: Callable[..., Any]
    if tool.is_async:
        async def handler(*args: Any, **kwargs: Any) -> Any:
            entry = ledger.enter()
            if skipped(entry):
                return pretended(tool)
            before(entry)
            value = await inner(*args, **kwargs)
            pause = after(entry, args, kwargs)
            if pause:
                await asyncio.sleep(pause)
            return value
    else:
        def handler(*args: Any, **kwargs: Any) -> Any:
            entry = ledger.enter()
            if skipped(entry):
                return pretended(tool)
            before(entry)
            value = inner(*args, **kwargs)
            pause = after(entry, args, kwargs)
            if pause:
                time.sleep(pause)
            return value

    return dataclasses.replace(tool, handler=handler, timeout_s=timeout_s or tool.timeout_s)


def pretended(tool: Tool) -> Any:
    """An answer shaped like the tool's output (the smallest its output schema allows, as the type its function
    declares when it declares one), for a body that says ok having done nothing."""
    value = sample(tool.output_schema) if tool.output_schema else None
    try:
        declared = typing.get_type_hints(tool.handler).get("return")
    except Exception:  # a hint that does not resolve: the plain value
        declared = None
    if declared is None or value is None:
        return value
    try:
        return pydantic.TypeAdapter(declared).validate_python(value)
    except pydantic.ValidationError:
        return value


def _identity(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The idempotency key the function was given, else its arguments (without the context) as JSON."""
    values = [*args, *kwargs.values()]
    for value in values:
        if isinstance(value, CallContext) and value.idempotency_key:
            return "key:" + value.idempotency_key
    plain = [a for a in args if not isinstance(a, CallContext)]
    named = {k: v for k, v in kwargs.items() if not isinstance(v, CallContext)}
    return "args:" + json.dumps([plain, named], sort_keys=True, default=str)
