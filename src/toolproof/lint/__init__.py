"""`toolproof.lint`: find, before any model does, the names, descriptions and schemas that cause wrong picks
and wrong arguments. Rules run over plain tool definitions, so Python toolsets, JSON files and live MCP servers
are linted by one engine."""

from __future__ import annotations

from .._surface import publish_all
from ._config import DEFAULT_THRESHOLDS, LintConfig
from ._engine import active_rules, lint, lint_tooldefs, rule_by_key
from ._findings import SEVERITIES, Finding, Severity
from ._loaders import (
    from_definitions,
    from_toolset,
    load_file,
    load_mcp_command,
    load_mcp_url,
    load_target,
    relisted,
)
from ._model import ToolDef
from ._rules import ALL_RULES, Rule

__all__ = [
    "ALL_RULES", "DEFAULT_THRESHOLDS", "SEVERITIES", "Finding", "LintConfig", "Rule", "Severity", "ToolDef",
    "active_rules", "from_definitions", "from_toolset", "lint", "lint_tooldefs", "load_file", "load_mcp_command",
    "load_mcp_url", "load_target", "relisted", "rule_by_key",
]

publish_all(globals())
