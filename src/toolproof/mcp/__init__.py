"""MCP: serve a guarded toolset, import the tools of remote servers, and a gateway in front of any server.

Needs the `mcp` extra (`pip install 'toolproof[mcp]'`).
"""

from __future__ import annotations

try:
    import mcp as _sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("toolproof.mcp needs the MCP SDK: pip install 'toolproof[mcp]'") from exc

from .auth import HttpAuth, InsecureBind, IntrospectionVerifier, TokenTable, check_bind
from .caps import ResponseCaps
from .client import ImportedToolset, build_tool, close_open_schema, import_tools
from .config import (
    ConfigError,
    GatewayConfig,
    NamingPolicy,
    ToolOverride,
    Upstream,
    gateway_config,
    load_config,
    parse_upstream_spec,
)
from .connection import UpstreamConnection
from .errormap import DEFAULT_ERROR_MAPPING, ErrorMapping, ErrorRule
from .gateway import Gateway
from .limits import LimitRule
from .naming import NameClash, assign_names
from .server import (
    META_CONVERSATION_ID,
    META_OCCURRENCE,
    META_PRINCIPAL,
    META_RUN_ID,
    call_context,
    create_server,
    serve_http,
    serve_stdio,
    tool_result,
)
from .trust import ToolPolicy, derive_policy

__all__ = [
    "DEFAULT_ERROR_MAPPING",
    "META_CONVERSATION_ID",
    "META_OCCURRENCE",
    "META_PRINCIPAL",
    "META_RUN_ID",
    "ConfigError",
    "ErrorMapping",
    "ErrorRule",
    "Gateway",
    "GatewayConfig",
    "HttpAuth",
    "ImportedToolset",
    "InsecureBind",
    "IntrospectionVerifier",
    "LimitRule",
    "NameClash",
    "NamingPolicy",
    "ResponseCaps",
    "TokenTable",
    "ToolOverride",
    "ToolPolicy",
    "Upstream",
    "UpstreamConnection",
    "assign_names",
    "build_tool",
    "call_context",
    "check_bind",
    "close_open_schema",
    "create_server",
    "derive_policy",
    "gateway_config",
    "import_tools",
    "load_config",
    "parse_upstream_spec",
    "serve_http",
    "serve_stdio",
    "tool_result",
]
