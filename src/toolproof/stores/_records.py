"""Plain records that the pipeline writes and stores keep: one audit row per attempt, one stop per give-up.

Values only (no I/O); `audit.py` builds them, `stores/` persist them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..contract._values import value

__all__ = ["AuditRecord", "EffectStatus", "StopRecord", "ValidationOutcome"]

EffectStatus = Literal["done", "not_done", "unknown"]
ValidationOutcome = Literal["ok", "failed", "skipped"]


@value
@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One attempt of one call, with secrets already redacted from `arguments`."""

    at: float  # unix time, seconds
    call_id: str
    tool: str
    schema_version: str | None
    arguments: Any
    validation: ValidationOutcome
    attempt: int
    latency_ms: float
    outcome: str  # "ok", "error", "replayed", "not_dispatched", ...
    run_id: str | None = None
    conversation_id: str | None = None
    principal: str | None = None
    failing_fields: tuple[str, ...] = ()
    error_class: str | None = None
    code: str | None = None
    idempotency_key: str | None = None
    # The tool's own exception, for its developer (never for the model): redacted and bounded.
    exception_type: str | None = None
    exception_message: str | None = None
    traceback: str | None = None


@value
@dataclass(frozen=True, slots=True)
class StopRecord:
    """Why the orchestrator gave up on a call, and whether its side effect is known done, not done, or unknown."""

    id: str
    at: float
    tool: str
    call_id: str
    arguments: Any
    error_class: str
    code: str
    message: str
    attempts: int
    effect_status: EffectStatus
    reason: str  # budget_exhausted, high_risk, non_retryable, circuit_open, repeat_guard, outcome_unknown, ...
    run_id: str | None = None
    conversation_id: str | None = None
    idempotency_key: str | None = None
    resolved_at: float | None = None
    resolution: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The tool's own exception behind the give-up, when there was one (as on `AuditRecord`).
    exception_type: str | None = None
    exception_message: str | None = None
    traceback: str | None = None


#: Bytes counted for a kept audit entry's fixed part (its tuple or record, ids, times, the error object).
AUDIT_ROW_BYTES = 600


def approx_bytes(value: Any, depth: int = 0) -> int:
    """About what `value` takes in this process (CPython object sizes, rounded up): a bound by size that
    costs no serialisation. Strings count their length; containers their items; anything else 64 bytes."""
    kind = type(value)
    if kind is str:
        return 56 + len(value)
    if kind is int or kind is float or kind is bool or value is None:
        return 32
    if depth > 32:
        return 64
    if kind is dict:
        return 240 + sum(approx_bytes(k, depth + 1) + approx_bytes(v, depth + 1) for k, v in value.items())
    if kind is list or kind is tuple:
        return 64 + 8 * len(value) + sum(approx_bytes(v, depth + 1) for v in value)
    if kind is bytes:
        return 40 + len(value)
    return 64


def audit_bytes(arguments: Any, *texts: str | None) -> int:
    """The size an audit entry or record is counted at: its fixed part, its arguments and its texts."""
    if type(arguments) is dict:  # the common case, inline: validated arguments of a few plain values
        size = AUDIT_ROW_BYTES + 240
        for key, value in arguments.items():
            size += (56 + len(key) if type(key) is str else approx_bytes(key, 1)) + (
                56 + len(value) if type(value) is str else approx_bytes(value, 1))
    else:
        size = AUDIT_ROW_BYTES + approx_bytes(arguments)
    for text in texts:
        if text:
            size += 56 + len(text)
    return size
