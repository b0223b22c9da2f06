"""MCP: serve a guarded toolset, import the tools of remote servers, and a gateway in front of any server.

Needs the `mcp` extra (`pip install 'toolproof[mcp]'`).
"""

from __future__ import annotations

try:
    import mcp as _sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("toolproof.mcp needs the MCP SDK: pip install 'toolproof[mcp]'") from exc

from .._surface import publish_all
from ._auth import HttpAuth, InsecureBind, IntrospectionVerifier, TokenTable, check_bind
from ._caps import ResponseCaps
from ._client import ImportedToolset, build_tool, close_open_schema, import_tools
from ._config import (
    ConfigError,
    GatewayConfig,
    NamingPolicy,
    ToolOverride,
    Upstream,
    gateway_config,
    load_config,
    parse_upstream_spec,
)
from ._connection import UpstreamConnection
from ._errormap import DEFAULT_ERROR_MAPPING, ErrorMapping, ErrorRule
from ._gateway import Gateway
from ._limits import LimitRule
from ._naming import NameClash, assign_names
from ._server import (
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
from ._trust import ToolPolicy, derive_policy

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

publish_all(globals())
