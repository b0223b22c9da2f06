"""toolproof: a contract between an AI agent and its tools.

Strict tool definitions going in, one error envelope coming out, retries that cannot repeat an action.
The root holds what users write; everything else lives in its module (see docs/architecture.md). Subpackages
with optional dependencies stay namespaced: `toolproof.mcp` (the `mcp` extra), `toolproof.retrieval`
(`retrieval`), `toolproof.evals`, `toolproof.lint`; `PostgresStore` needs the `postgres` extra.
"""

from __future__ import annotations

from ._surface import publish
from ._version import __version__
from .audit._trail import Hook
from .catalog._toolset import Toolset
from .contract._classify import classify_exception, classify_http
from .contract._context import CallContext
from .contract._envelope import Envelope, ErrorInfo, MalformedEnvelope, Meta, envelope_schema, from_problem, to_problem
from .contract._errors import (
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
from .contract._tool import NOT_DONE, Secret, Tool, ToolOptions, tool
from .contract._validate import Limits
from .contract._verifiers import verify_by_http, verify_by_sql
from .orchestration.breaker import BreakerConfig
from .orchestration.policy import RetryPolicy, RunBudget
from .pipeline._effects import Clock
from .pipeline._runner import Runner
from .stores import MemoryStore, SqliteStore, Store, open_store
from .stores._records import AuditRecord, StopRecord


def __getattr__(name: str) -> object:
    if name == "PostgresStore":  # psycopg is an extra: import it only when asked for
        from .stores._postgres import PostgresStore

        if PostgresStore.__module__ != __name__:
            publish(PostgresStore, __name__)
        return PostgresStore
    raise AttributeError(f"module 'toolproof' has no attribute {name!r}")


__all__ = [
    "NOT_DONE",
    "AuditRecord",
    "AuthFailed",
    "BreakerConfig",
    "CallContext",
    "Clock",
    "Conflict",
    "DefinitionError",
    "Envelope",
    "ErrorClass",
    "ErrorInfo",
    "Hook",
    "InternalError",
    "InvalidArgument",
    "Limits",
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
    "RunBudget",
    "Runner",
    "Secret",
    "SqliteStore",
    "StopRecord",
    "Store",
    "Tool",
    "ToolError",
    "ToolOptions",
    "Toolset",
    "TransientUpstream",
    "UnknownTool",
    "__version__",
    "classify_exception",
    "classify_http",
    "envelope_schema",
    "from_problem",
    "open_store",
    "to_problem",
    "tool",
    "verify_by_http",
    "verify_by_sql",
]

for _name in __all__:
    if _name not in ("__version__", "PostgresStore", "Hook", "NOT_DONE"):
        publish(globals()[_name], __name__)
del _name
