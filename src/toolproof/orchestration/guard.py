"""The loop guard: an agent that repeats a call that just failed is stopped, not served the same error forever.

Within one scope (the run, or else the conversation), a byte-identical repeat of a tool's last call, when
that call failed with a class that is not retryable, is not dispatched again: the same error comes back
with `next_action: "escalate"` and code `REPEATED_FAILING_CALL`. The memory of a failure ends when the
same tool is called with other arguments or succeeds, and, for the `reread` classes (conflict, partial
execution), when a read tool succeeds in the scope (the state was re-read; trying again is the advice).
`max_tool_failures` failed calls of one tool in one scope escalate too, whatever the arguments.
Decisions only; the runner asks and reports. Memory is bounded: `max_scopes` scopes (oldest forgotten first),
each holding per tool a digest of its last failing call (never the arguments' text) and its error.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Final

from ..contract._canonical import canonical_json, digest
from ..contract._envelope import ErrorInfo
from ..contract._errors import InvalidArgument, NextAction

REPEATED_FAILING_CALL: Final = "REPEATED_FAILING_CALL"
TOO_MANY_FAILURES: Final = "TOO_MANY_FAILURES"


def call_key(arguments: Any) -> str:
    """The identity of a call's arguments: their canonical JSON (the idempotency keys' own), JSON text parsed
    first, so `{"n": 40}` and `{"n": 40.0}` are one call; text that is not JSON is its own identity."""
    if isinstance(arguments, str | bytes):
        text = arguments.decode("utf-8", "replace") if isinstance(arguments, bytes) else arguments
        if len(text) >= 1_000_000:
            return text
        try:
            arguments = json.loads(text)
        except (ValueError, RecursionError):
            return text  # never valid JSON, so never equal to a canonical text
    try:
        return canonical_json(arguments)
    except InvalidArgument:
        pass
    try:  # NaN, non-string keys...: no key, yet a repeat of them is still a repeat ("~" starts no JSON text)
        return "~" + json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):
        return f"<unkeyable {os.urandom(8).hex()}>"  # too deep to compare: never treated as a repeat


@dataclass(slots=True)
class _Scope:
    # tool -> (the digest of the failed call's `call_key`, its error): a repeat is recognised by the digest, so
    # a scope keeps 64 characters per tool however long the failing arguments were.
    last_failure: dict[str, tuple[str, ErrorInfo]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    last_error: dict[str, ErrorInfo] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Blocked:
    """The guard refuses this call: return `error` (already escalated) without dispatching."""

    error: ErrorInfo
    reason: str  # "repeat_guard" or "failure_limit"


class LoopGuard:
    """Per-scope memory of failing calls; `Runner(loop_guard=LoopGuard(...))`, `None` to turn it off."""

    def __init__(self, *, max_tool_failures: int = 5, max_scopes: int = 10_000) -> None:
        if max_tool_failures < 1 or max_scopes < 1:
            raise ValueError("max_tool_failures and max_scopes must be >= 1")
        self.max_tool_failures = max_tool_failures
        self.max_scopes = max_scopes
        self._scopes: dict[str, _Scope] = {}
        self._lock = threading.Lock()

    def check(self, scope: str, tool: str, arguments: Any) -> Blocked | None:
        """Before validation and dispatch: None to go ahead, or why not."""
        state = self._scopes.get(scope)
        if state is None:
            return None
        with self._lock:
            last = state.last_failure.get(tool)
            count = state.failures.get(tool, 0)
            last_error = state.last_error.get(tool)
        if last is not None and last[0] == digest(call_key(arguments)):
            info = last[1]
            return Blocked(
                _escalated(
                    info,
                    REPEATED_FAILING_CALL,
                    f"This exact call just failed ({info.code}: {info.message}); it was not sent again.",
                    "Do not repeat the same call. Change the arguments as the first error said, or hand over "
                    "to a person.",
                ),
                "repeat_guard",
            )
        if count >= self.max_tool_failures and last_error is not None:
            info = last_error
            return Blocked(
                _escalated(
                    info,
                    TOO_MANY_FAILURES,
                    f"{tool} failed {count} times in this run; it is not called again.",
                    "Stop calling this tool for this request and hand over to a person.",
                ),
                "failure_limit",
            )
        return None

    def failed(self, scope: str, tool: str, arguments: Any, error: ErrorInfo, *, remember: bool) -> bool:
        """Report a failed call; True when this failure reached the per-tool limit (escalate it)."""
        key = digest(call_key(arguments)) if remember else ""
        with self._lock:
            state = self._scopes.get(scope)
            if state is None:
                if len(self._scopes) >= self.max_scopes:
                    del self._scopes[next(iter(self._scopes))]
                state = self._scopes[scope] = _Scope()
            if remember:
                state.last_failure[tool] = (key, error)
            else:
                state.last_failure.pop(tool, None)
            count = state.failures.get(tool, 0) + 1
            state.failures[tool] = count
            state.last_error[tool] = error
        return count >= self.max_tool_failures

    def succeeded(self, scope: str, tool: str, *, read: bool) -> None:
        """Report a success: forget the tool's last failure, and after a read the `reread` failures too."""
        state = self._scopes.get(scope)
        if state is None or not state.last_failure:
            return
        with self._lock:
            state.last_failure.pop(tool, None)
            if read:
                for name in [n for n, (_, e) in state.last_failure.items() if e.next_action is NextAction.REREAD]:
                    del state.last_failure[name]


def _escalated(info: ErrorInfo, code: str, message: str, hint: str) -> ErrorInfo:
    return ErrorInfo(
        error_class=info.error_class,
        code=code,
        message=message,
        retryable=info.retryable,
        next_action=NextAction.ESCALATE,
        field=info.field,
        received=info.received,
        allowed_values=info.allowed_values,
        hint=hint,
        retry_after_s=None,
        idempotency_key=info.idempotency_key,
        state={"first_error_code": info.code},
    )
