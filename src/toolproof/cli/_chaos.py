"""`toolproof chaos TARGET`: stage the faults that make agents repeat actions against the write tools of a toolset
or an MCP server, and count how often each action took effect."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._load import load_toolset
from ._options import JsonOpt, OutOpt, console, fail, print_json_lines, say, write_text

if TYPE_CHECKING:
    from ..chaos import Row, Scenario

_FAIL_ON = ("double-effect", "never")
_THROUGH = ("toolproof", "bare", "both")


def chaos_cmd(
    target: Annotated[str, typer.Argument(
        help="MODULE:TOOLSET (a toolproof.Toolset, or a function returning one), stdio:CMD (an MCP server "
             "started as CMD) or an MCP server's streamable HTTP URL.")],
    tool: Annotated[list[str] | None, typer.Option("--tool", "-t", help="Only this write tool (repeatable).")] = None,
    args: Annotated[list[str] | None, typer.Option(
        "--args", help="TOOL=JSON: the arguments a tool's calls send (default: its first example, else its schema's "
                       "smallest valid call). Repeatable.")] = None,
    through: Annotated[str, typer.Option(
        "--through", help="toolproof (a Runner on the scratch store), bare (the functions called directly, as "
                          "an agent framework's default loop does) or both.")] = "toolproof",
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Only this scenario (repeatable).")] = None,
    count_with: Annotated[str | None, typer.Option(
        "--count-with", help="MCP servers only: a read tool whose answer holds one number that counts the effects "
                             "(read before and after the calls).")] = None,
    principal: Annotated[str, typer.Option("--principal", help="The signed-in user the calls carry.")] = "chaos-user",
    store: Annotated[str | None, typer.Option(
        "--store", "-s", show_default=False,
        help="A store URL for toolproof's journal (default: a scratch SQLite file, removed afterwards).")] = None,
    conformance: Annotated[bool, typer.Option(
        "--conformance", help="MCP servers only: check instead whether the server runs a write once on a resend, a "
                              "cut stream and a session per call, and honours the identity extension it announces.")
    ] = False,
    fail_on: Annotated[str, typer.Option("--fail-on", help="double-effect: exit 1 when any scenario took effect "
                                                          "more than once (with --conformance: when any check "
                                                          "failed); never: exit 0.")] = "never",
    as_json: JsonOpt = False,
    out: OutOpt = None,
    html_out: Annotated[Path | None, typer.Option("--html", help="Write the self-contained HTML report here.")] = None,
) -> None:
    """Stage repeat-causing faults on every write tool; report effects per logical operation."""
    from ..chaos import SCENARIOS, run_chaos
    from ..chaos import scenario as find_scenario

    if fail_on not in _FAIL_ON:
        raise fail(f"--fail-on must be one of {', '.join(_FAIL_ON)}, got {fail_on!r}")
    if through not in _THROUGH:
        raise fail(f"--through must be one of {', '.join(_THROUGH)}, got {through!r}")
    try:
        chosen = [find_scenario(k) for k in scenario] if scenario else list(SCENARIOS)
    except KeyError as exc:
        raise fail(str(exc.args[0])) from None
    given = _arguments(args or [])
    if conformance:
        if not target.startswith(("stdio:", "http://", "https://")):
            raise fail("--conformance checks an MCP server: give stdio:CMD or a URL")
        if through != "toolproof" or store is not None or scenario or html_out is not None:
            raise fail("--conformance runs its own checks: --through, --store, --scenario and --html do not apply")
        _conformance(target, tool or [], given, count_with, principal, fail_on, as_json, out)
        return
    if target.startswith(("stdio:", "http://", "https://")):
        if through != "toolproof" or store is not None:
            raise fail("--through and --store are for MODULE:TOOLSET targets: an MCP server is run as it is")
        rows = _server_rows(target.removeprefix("stdio:"), tool or [], given, count_with, chosen, principal)
        _report(rows, target, fail_on, as_json, out, html_out)
        return
    if count_with is not None:
        raise fail("--count-with is for MCP servers: a toolset's effects are counted in its functions")
    toolset = load_toolset(target)
    for name in [*(tool or []), *given]:
        if name not in toolset:
            raise fail(f"{target!r} has no tool {name!r}; it has: {', '.join(toolset.names)}")
    # The staged faults are logged by the runner as real ones would be; the report says what happened.
    logs = logging.getLogger("toolproof")
    if not any(isinstance(h, logging.NullHandler) for h in logs.handlers):
        logs.addHandler(logging.NullHandler())
    ways: Any = ("toolproof", "bare") if through == "both" else (through,)
    rows = run_chaos(toolset, target=target, tools=tool or (), arguments=given, through=ways, scenarios=chosen,
                     store=store, principal=principal)
    _report(rows, target, fail_on, as_json, out, html_out)


def _server_rows(command: str, tools: list[str], given: dict[str, dict[str, Any]], count_with: str | None,
                 scenarios: list[Scenario], principal: str) -> list[Row]:
    from ..chaos._servers import ServerError, run_server_chaos

    try:
        return run_server_chaos(command, tools=tools, arguments=given, count_with=count_with, scenarios=scenarios,
                                principal=principal)
    except ServerError as exc:
        raise fail(str(exc)) from None


def _report(rows: list[Row], target: str, fail_on: str, as_json: bool, out: Path | None,
            html_out: Path | None) -> None:
    from ..chaos import print_rows, render_html, summary

    if not rows:
        raise fail(f"{target!r} has no write tools: every tool is declared read-only", code=1)
    data = [r.to_dict() for r in rows] + [summary(rows)]
    if as_json:
        print_json_lines(data)
    else:
        print_rows(rows, console, title=f"toolproof chaos {target}")
    if out is not None:
        write_text(out, "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in data), "the JSON lines")
    if html_out is not None:
        write_text(html_out, render_html(rows, f"toolproof chaos {target}"), "the HTML report")
    if fail_on == "double-effect" and any(r.double_effect for r in rows):
        say(f"exit 1: {sum(r.double_effect for r in rows)} scenario(s) took effect more than once", stderr=True)
        raise typer.Exit(1)


def _conformance(target: str, tools: list[str], given: dict[str, dict[str, Any]], count_with: str | None,
                 principal: str, fail_on: str, as_json: bool, out: Path | None) -> None:
    from ..chaos._conformance import run_conformance
    from ..chaos._report import print_checks
    from ..chaos._servers import ServerError

    try:
        checks = run_conformance(target.removeprefix("stdio:"), tools=tools, arguments=given, count_with=count_with,
                                 principal=principal)
    except ServerError as exc:
        raise fail(str(exc)) from None
    if not checks:
        raise fail(f"{target!r} has no write tools: every tool is declared read-only", code=1)
    data = [c.to_dict() for c in checks]
    if as_json:
        print_json_lines(data)
    else:
        print_checks(checks, console, title=f"toolproof chaos {target} --conformance")
    if out is not None:
        write_text(out, "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in data), "the JSON lines")
    failed = [c for c in checks if c.verdict == "fail"]
    if fail_on == "double-effect" and failed:
        say(f"exit 1: {len(failed)} conformance check(s) failed", stderr=True)
        raise typer.Exit(1)


def _arguments(items: list[str]) -> dict[str, dict[str, Any]]:
    given: dict[str, dict[str, Any]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise fail(f"--args takes TOOL=JSON, got {item!r}")
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise fail(f"--args {name}: not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise fail(f"--args {name}: expected a JSON object, got {type(value).__name__}")
        given[name] = value
    return given


def register(app: typer.Typer) -> None:
    app.command("chaos")(chaos_cmd)
