"""`toolproof lint TARGET...`: lint tool definitions from Python toolsets, JSON/JSONL files and MCP servers."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ..contract._errors import DefinitionError
from ..lint import LintConfig, active_rules, lint_tooldefs, load_mcp_command, load_mcp_url, load_target
from ..lint._findings import SEVERITIES, Finding
from ..lint._loaders import FORMATS
from ..lint._model import ToolDef
from ..lint.report import render_text, to_json, to_sarif
from ._options import (
    MCP_COMMAND_HELP,
    MCP_URL_HELP,
    JsonOpt,
    OutOpt,
    console,
    fail,
    json_lines,
    missing_file,
    plain_text,
    plural,
    write_text,
)


def lint_cmd(
    targets: list[str] = typer.Argument(None, help="Files (JSON/JSONL) or MODULE:TOOLSET."),
    fmt: str = typer.Option("text", "--format", "-f", help="text, json (the same as --json) or sarif."),
    as_json: JsonOpt = False,
    fail_on: str = typer.Option("error", "--fail-on", help="Exit 1 if a finding at or above this severity exists."),
    select: list[str] = typer.Option([], "--select", help="Only these rules (code, prefix like TP3, slug, ALL)."),
    ignore: list[str] = typer.Option([], "--ignore", help="Skip these rules (code, prefix or slug)."),
    format_in: str = typer.Option("auto", "--format-in", help="Input format: auto, mcp, openai, anthropic, bfcl."),
    mcp_command: list[str] = typer.Option([], "--mcp-command", metavar="COMMAND",
                                          help=f"{MCP_COMMAND_HELP} Repeatable."),
    mcp_url: list[str] = typer.Option([], "--mcp-url", metavar="URL", help=f"{MCP_URL_HELP} Repeatable."),
    config: Path = typer.Option(Path("pyproject.toml"), "--config", help="pyproject.toml with the lint table."),
    out: OutOpt = None,
) -> None:
    """Lint tool definitions; exit 1 when a finding at or above --fail-on exists. --json prints one finding
    a line."""
    fmt = "json" if as_json else fmt
    if fmt not in ("text", "json", "sarif"):
        raise fail(f"--format must be text, json or sarif, got {fmt!r}")
    if fail_on not in SEVERITIES:
        raise fail(f"--fail-on must be one of {', '.join(SEVERITIES)}, got {fail_on!r}")
    if format_in not in ("auto", *FORMATS):
        raise fail(f"--format-in must be auto or one of {', '.join(FORMATS)}, got {format_in!r}")
    if not targets and not mcp_command and not mcp_url:
        raise fail("give at least one TARGET, --mcp-command or --mcp-url")
    try:
        cfg = LintConfig.from_pyproject(config) if config.is_file() else LintConfig()
        cfg = cfg.with_cli(select=_split(select), ignore=_split(ignore))
        tools: list[ToolDef] = []
        for target in targets or []:
            if (missing := missing_file(target)) is not None:
                raise DefinitionError(missing)
            tools.extend(load_target(target, format_in=format_in))  # type: ignore[arg-type]
        relist = any(r.code == "TP406" for r in active_rules(cfg))
        for command in mcp_command:  # listed twice only for TP406: `--ignore TP406` costs one listing
            tools.extend(load_mcp_command(command, relist=relist))
        for url in mcp_url:
            tools.extend(load_mcp_url(url, relist=relist))
        findings = lint_tooldefs(tools, cfg)
    except DefinitionError as exc:
        raise fail(str(exc)) from None
    if fmt == "text" and out is None:
        render_text(findings, console, n_tools=len(tools))
    else:
        text = _render(findings, fmt, len(tools))
        if out is None:
            typer.echo(text, nl=False)
        else:
            write_text(out, text, f"{plural(len(findings), 'finding', 'findings')} ({fmt})")
    if any(f.at_least(fail_on) for f in findings):
        raise typer.Exit(1)

def _render(findings: list[Finding], fmt: str, n_tools: int) -> str:
    if fmt == "json":
        return json_lines(to_json(findings))
    if fmt == "sarif":
        return json.dumps(to_sarif(findings), indent=2, ensure_ascii=False) + "\n"
    return plain_text(lambda into: render_text(findings, into, n_tools=n_tools))


def _split(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def register(app: typer.Typer) -> None:
    app.command("lint")(lint_cmd)
