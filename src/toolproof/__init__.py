"""toolproof: a contract between an AI agent and its tools.

Strict tool definitions going in, one error envelope coming out, retries that cannot repeat an action.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .audit import Hook, redact
from .breaker import BreakerConfig, BreakerState, CircuitBreaker
from .classify import classify_exception, classify_http, classify_problem, parse_retry_after
from .context import CallContext
from .envelope import Envelope, ErrorInfo, MalformedEnvelope, Meta, envelope_schema, from_problem, to_problem
from .errors import (
    ACTION_DESCRIPTIONS,
    CLASS_SPECS,
    CONTRACT_VERSION,
    AuthFailed,
    Conflict,
    DefinitionError,
    ErrorClass,
    InternalError,
    InvalidArgument,
    NeedsClarification,
    NextAction,
    NotFound,
    OutcomeUnknown,
    PartialExecution,
    PermissionDenied,
    RateLimited,
    ToolError,
    TransientUpstream,
    UnknownTool,
)
from .guard import LoopGuard
from .intent import Intent
from .journal import Journal
from .keys import KeyParts, canonical_json, idempotency_key, key_parts
from .policy import RetryPolicy, RetryTokenBucket, RunBudget, StopReason
from .records import AuditRecord, StopRecord
from .runner import Clock, Runner
from .stores import MemoryStore, SqliteStore, Store, open_store
from .tool import Secret, Tool, tool
from .toolset import Toolset
from .validate import Limits

# Subpackages with optional dependencies stay namespaced: `toolproof.mcp` (the `mcp` extra),
# `toolproof.retrieval` (`retrieval`), `toolproof.evals`, `toolproof.lint`; `PostgresStore` needs `postgres`.


def __getattr__(name: str) -> object:
    if name == "PostgresStore":
        from .stores.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module 'toolproof' has no attribute {name!r}")

try:
    __version__ = version("toolproof")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = [
    "ACTION_DESCRIPTIONS",
    "CLASS_SPECS",
    "CONTRACT_VERSION",
    "AuditRecord",
    "AuthFailed",
    "BreakerConfig",
    "BreakerState",
    "CallContext",
    "CircuitBreaker",
    "Clock",
    "Conflict",
    "DefinitionError",
    "Envelope",
    "ErrorClass",
    "ErrorInfo",
    "Hook",
    "Intent",
    "InternalError",
    "InvalidArgument",
    "Journal",
    "KeyParts",
    "Limits",
    "LoopGuard",
    "MalformedEnvelope",
    "MemoryStore",
    "Meta",
    "NeedsClarification",
    "NextAction",
    "NotFound",
    "OutcomeUnknown",
    "PartialExecution",
    "PermissionDenied",
    "PostgresStore",
    "RateLimited",
    "RetryPolicy",
    "RetryTokenBucket",
    "RunBudget",
    "Runner",
    "Secret",
    "SqliteStore",
    "StopReason",
    "StopRecord",
    "Store",
    "Tool",
    "ToolError",
    "Toolset",
    "TransientUpstream",
    "UnknownTool",
    "__version__",
    "canonical_json",
    "classify_exception",
    "classify_http",
    "classify_problem",
    "envelope_schema",
    "from_problem",
    "idempotency_key",
    "key_parts",
    "open_store",
    "parse_retry_after",
    "redact",
    "to_problem",
    "tool",
]
