"""toolproof: a contract between an AI agent and its tools.

Strict tool definitions going in, one error envelope coming out, retries that cannot repeat an action.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

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
from .runner import Clock, Runner
from .tool import Secret, Tool, tool
from .toolset import Toolset
from .validate import Limits

try:
    __version__ = version("toolproof")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = [
    "ACTION_DESCRIPTIONS",
    "CLASS_SPECS",
    "CONTRACT_VERSION",
    "AuthFailed",
    "CallContext",
    "Clock",
    "Conflict",
    "DefinitionError",
    "Envelope",
    "ErrorClass",
    "ErrorInfo",
    "InternalError",
    "InvalidArgument",
    "Limits",
    "MalformedEnvelope",
    "Meta",
    "NeedsClarification",
    "NextAction",
    "NotFound",
    "OutcomeUnknown",
    "PartialExecution",
    "PermissionDenied",
    "RateLimited",
    "Runner",
    "Secret",
    "Tool",
    "ToolError",
    "Toolset",
    "TransientUpstream",
    "UnknownTool",
    "__version__",
    "classify_exception",
    "classify_http",
    "classify_problem",
    "envelope_schema",
    "from_problem",
    "parse_retry_after",
    "to_problem",
    "tool",
]
