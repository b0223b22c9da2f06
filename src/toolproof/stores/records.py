"""Plain records that the pipeline writes and stores keep: one audit row per attempt, one stop per give-up.

Values only (no I/O); `audit.py` builds them, `stores/` persist them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..contract.values import value

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
