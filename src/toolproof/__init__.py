"""toolproof: a contract between an AI agent and its tools.

Strict tool definitions going in, one error envelope coming out, retries that cannot repeat an action.
The root holds what users write; everything else lives in its module (see docs/architecture.md). Subpackages
with optional dependencies stay namespaced: `toolproof.mcp` (the `mcp` extra), `toolproof.retrieval`
(`retrieval`), `toolproof.evals`, `toolproof.lint`; `PostgresStore` needs the `postgres` extra.
"""

from __future__ import annotations

from ._version import __version__
from .audit.trail import Hook
from .catalog.toolset import Toolset
from .contract.classify import classify_exception, classify_http
from .contract.context import CallContext
from .contract.envelope import Envelope, ErrorInfo, MalformedEnvelope, Meta
from .contract.errors import (
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
from .contract.tool import Secret, Tool, tool
from .contract.validate import Limits
from .orchestration.breaker import BreakerConfig
from .orchestration.policy import RetryPolicy, RunBudget
from .pipeline.runner import Runner
from .stores import MemoryStore, SqliteStore, Store, open_store
from .stores.records import AuditRecord, StopRecord


def __getattr__(name: str) -> object:
    if name == "PostgresStore":  # psycopg is an extra: import it only when asked for
        from .stores.postgres import PostgresStore

        PostgresStore.__module__ = __name__
        return PostgresStore
    raise AttributeError(f"module 'toolproof' has no attribute {name!r}")


__all__ = [
    "AuditRecord",
    "AuthFailed",
    "BreakerConfig",
    "CallContext",
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
    "Toolset",
    "TransientUpstream",
    "UnknownTool",
    "__version__",
    "classify_exception",
    "classify_http",
    "open_store",
    "tool",
]

# Values print under their public names (`<class 'toolproof.Runner'>`, not the module that defines it), as httpx does.
for _value in [globals()[n] for n in __all__ if n not in ("__version__", "PostgresStore", "Hook")]:
    _value.__module__ = __name__
del _value
