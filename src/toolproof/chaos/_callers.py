"""The two ways a scenario on a toolset sends its calls: through toolproof's `Runner` on a store, or bare (the tool's
function called directly, as an agent framework's default loop does: validated, bound, called, no journal,
no retry policy). Each send comes back as a `Reply`: what the caller was told."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..catalog._toolset import Toolset
from ..contract._context import CallContext
from ..contract._envelope import Envelope
from ..contract._tool import Tool
from ..journal._journal import Journal
from ..pipeline._runner import Runner

__all__ = ["BareCaller", "Caller", "Reply", "Through", "ToolproofCaller", "caller"]

#: How the calls reach the tools: toolproof's runner, the bare function, or an MCP server as it is.
Through = Literal["toolproof", "bare", "server"]


@dataclass(frozen=True, slots=True)
class Reply:
    """One answer as the caller saw it: ok or not, replayed or not, and a short label (class, code, next
    action; or the exception a bare function raised); `key` is the idempotency key toolproof ran it under."""

    ok: bool
    told: str
    replayed: bool = False
    error_class: str | None = None
    next_action: str | None = None
    key: str | None = None

    @staticmethod
    def of(envelope: Envelope) -> Reply:
        meta = envelope.meta
        if envelope.ok:
            told = "ok (replayed)" if meta.replayed else "ok (settled by verify)" if "verified" in meta.extra else "ok"
            return Reply(True, told, meta.replayed, key=meta.idempotency_key)
        err = envelope.error
        assert err is not None
        action = err.next_action.value
        return Reply(False, f"{err.error_class.value} {err.code}, next_action={action}", False,
                     err.error_class.value, action, meta.idempotency_key)

    @staticmethod
    def lost(why: str) -> Reply:
        return Reply(False, f"nothing ({why})")

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Reply:
        return Reply(bool(data["ok"]), str(data["told"]), bool(data["replayed"]), data["class"], data["next_action"],
                     data.get("key"))

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "told": self.told, "replayed": self.replayed, "class": self.error_class,
                "next_action": self.next_action, "key": self.key}


class Caller(Protocol):
    """Sends one call of one tool; `close` when the scenario is over."""

    def send(self, arguments: dict[str, Any], context: CallContext) -> Reply: ...

    def close(self) -> None: ...


class ToolproofCaller:
    """Through a `Runner` of its own on the scenario's store: the journal, the retry policy, the envelope."""

    def __init__(self, tool: Tool, store: str, *, lease_s: float | None = None) -> None:
        self.tool = tool
        self.runner = Runner(Toolset([tool]), store=store)
        if lease_s is not None:  # a worker that dies is noticed after this long, not after minutes
            self.runner.journal = Journal(self.runner.store, lease_s=lease_s, wait_s=min(lease_s, 1.0))

    def send(self, arguments: dict[str, Any], context: CallContext) -> Reply:
        return Reply.of(self.runner.call_sync(self.tool.name, arguments, context=context))

    def close(self) -> None:
        self.runner.close()


class BareCaller:
    """The function called directly; with `timeout_s` the caller stops waiting (the function runs on)."""

    def __init__(self, tool: Tool, *, timeout_s: float | None = None) -> None:
        self.tool = tool
        self.timeout_s = timeout_s

    def send(self, arguments: dict[str, Any], context: CallContext) -> Reply:
        if self.timeout_s is None:
            return self._call(arguments, context)
        box: list[Reply] = []
        worker = threading.Thread(target=lambda: box.append(self._call(arguments, context)), daemon=True,
                                  name=f"chaos-bare-{self.tool.name}")
        worker.start()
        worker.join(self.timeout_s)
        return box[0] if box else Reply(False, f"TimeoutError (the caller stopped waiting after {self.timeout_s:g} s)")

    def _call(self, arguments: dict[str, Any], context: CallContext) -> Reply:
        tool = self.tool
        try:
            args, kwargs = tool.bind(tool.parse_arguments(arguments), context)
            value = tool.handler(*args, **kwargs)
            if tool.is_async:
                asyncio.run(value)
        except Exception as exc:
            return Reply(False, f"{type(exc).__name__}: {exc}")
        return Reply(True, "ok")

    def close(self) -> None:
        """Nothing to release: no runner, no store."""


def caller(through: Through, tool: Tool, store: str, *, timeout_s: float | None = None,
           lease_s: float | None = None) -> Caller:
    """The caller for `through`; a time limit goes on the tool for toolproof (its runner enforces it) and on
    the waiting for a bare call."""
    if through == "toolproof":
        return ToolproofCaller(tool, store, lease_s=lease_s)
    return BareCaller(tool, timeout_s=timeout_s)
