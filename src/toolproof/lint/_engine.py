"""Run the selected rules over tool definitions: per tool, per toolset, and once across the whole run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from ..contract._errors import DefinitionError
from ._config import LintConfig
from ._findings import Finding, Severity
from ._loaders import to_tooldefs
from ._model import ToolDef, ToolGroup
from ._rules import ALL_RULES, RUN_WIDE, Hit, Rule


def rule_by_key(key: str) -> Rule | None:
    return next((r for r in ALL_RULES if key in (r.code, r.slug)), None)


def active_rules(config: LintConfig) -> list[Rule]:
    """Default-on rules (or those selected), plus `extend_select`, minus `ignore`."""
    for selector in (*config.select, *config.extend_select, *config.ignore):
        if selector != "ALL" and not any(r.matches(selector) for r in ALL_RULES):
            raise DefinitionError(f"unknown lint rule or prefix {selector!r}")
    if config.select:
        chosen = [r for r in ALL_RULES if any(r.matches(s) for s in config.select)]
    else:
        chosen = [r for r in ALL_RULES if r.default_on]
    chosen += [r for r in ALL_RULES if r not in chosen and any(r.matches(s) for s in config.extend_select)]
    return [r for r in ALL_RULES if r in chosen and not any(r.matches(s) for s in config.ignore)]


def _severity(rule: Rule, config: LintConfig) -> Severity:
    value = config.severities.get(rule.code) or config.severities.get(rule.slug) or rule.severity
    return cast(Severity, value)


def _ignored(rule: Rule, tool: str, config: LintConfig) -> bool:
    for pattern, keys in config.per_tool_ignores.items():
        hit = tool == pattern or (pattern.endswith("*") and tool.startswith(pattern[:-1]))
        if hit and any(rule.matches(k) for k in keys):
            return True
    return False


def _with_encoder(config: LintConfig, rules: Sequence[Rule]) -> LintConfig:
    """The static embedding model, loaded once for the whole run, when the embedding look-alike pass is on;
    without the model or `tokenizers` the lexical passes run alone."""
    if config.encoder is not None or config.threshold("lookalike-embedding") <= 0:
        return config
    if not any(r.code in ("TP402", "TP405") for r in rules):
        return config
    try:
        from ..retrieval.static import StaticEncoder

        return replace(config, encoder=StaticEncoder())
    except ImportError:
        return config


def lint_tooldefs(tools: Sequence[ToolDef], config: LintConfig | None = None) -> list[Finding]:
    # Pausing the cyclic collector for the run would save about a quarter of it at 10,000 tools (it rescans
    # the caller's heap of parsed definitions), but it is process-wide state a library must not flip.
    config = config or LintConfig()
    rules = active_rules(config)
    config = _with_encoder(config, rules)
    groups: dict[tuple[str, str], list[ToolDef]] = defaultdict(list)
    for t in tools:
        groups[(t.source, t.toolset)].append(t)
    findings: list[Finding] = []
    per_tool = bool(config.per_tool_ignores)

    def report(rule: Rule, severity: Severity, h: Hit, source: str, toolset: str) -> None:
        tool = h.tool
        name = tool.label if tool is not None else ""
        if per_tool and name and _ignored(rule, name, config):
            return
        findings.append(Finding(rule.code, rule.slug, severity, name, h.pointer, h.message, h.fix or rule.fix,
                                tool.source if tool is not None else source,
                                tool.toolset if tool is not None else toolset))

    tool_checks = [(r, _severity(r, config), r.tool_check) for r in rules if r.tool_check is not None]
    set_checks = [(r, _severity(r, config), r.toolset_check) for r in rules
                  if r.toolset_check is not None and r.code not in RUN_WIDE]
    run_checks = [(r, _severity(r, config), r.toolset_check) for r in rules
                  if r.toolset_check is not None and r.code in RUN_WIDE]
    for (source, toolset), listed in groups.items():
        members = ToolGroup(listed)
        for t in members:
            for rule, severity, tool_check in tool_checks:
                for hit in tool_check(t, config):
                    report(rule, severity, hit, source, toolset)
        for rule, severity, set_check in set_checks:
            for hit in set_check(members, config):
                report(rule, severity, hit, source, toolset)
    everything = ToolGroup(tools)
    for rule, severity, run_check in run_checks:
        for hit in run_check(everything, config):
            report(rule, severity, hit, "", "")
    return findings


def lint(target: Any, config: LintConfig | None = None) -> list[Finding]:
    """Lint a `Toolset`, a list of tool definitions (MCP, OpenAI, Anthropic or BFCL dicts), a tools/list
    result, or `ToolDef`s. Returns findings; never raises for a bad definition (that is a finding)."""
    return lint_tooldefs(to_tooldefs(target), config)
