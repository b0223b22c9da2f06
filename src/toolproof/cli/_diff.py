"""`toolproof diff OLD NEW`: classify every change between two versions of a toolset (lock files, definition
files, `MODULE:TOOLSET`, `stdio:COMMAND` or an MCP URL) as breaking, behavioural or compatible."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import typer
from rich.text import Text

from .._version import __version__
from ..contract._errors import DefinitionError
from ..lint.report import SARIF_SCHEMA
from ..versions import CLASSES, RULES, Change, counts, diff_locks, fails
from ._lockload import load_lock
from ._options import JsonOpt, OutOpt, console, fail, json_lines, write_text

_STYLE: Final = {"breaking": "bold red", "behavioural": "yellow", "compatible": "green"}
_SARIF_LEVEL: Final = {"breaking": "error", "behavioural": "warning", "compatible": "note"}


def diff_cmd(
    old: str = typer.Argument(..., help="The reviewed version: a lock file, definitions, MODULE:TOOLSET, ..."),
    new: str = typer.Argument(..., help="The version to check against it."),
    fmt: str = typer.Option("text", "--format", "-f", help="text, json (the same as --json) or sarif."),
    as_json: JsonOpt = False,
    fail_on: str = typer.Option("breaking", "--fail-on", help="Exit 1 on a change this bad or worse: breaking, "
                                "behavioural or compatible."),
    out: OutOpt = None,
) -> None:
    """Exit 0 when nothing at or above --fail-on changed, 1 when something did, 2 when a side cannot be read.
    --json prints one change a line."""
    fmt = "json" if as_json else fmt
    if fmt not in ("text", "json", "sarif"):
        raise fail(f"--format must be text, json or sarif, got {fmt!r}")
    if fail_on not in CLASSES:
        raise fail(f"--fail-on must be one of {', '.join(CLASSES)}, got {fail_on!r}")
    try:
        changes = diff_locks(load_lock(old), load_lock(new))
    except DefinitionError as exc:
        raise fail(str(exc)) from None
    if fmt == "text" and out is None:
        render_text(changes)
    else:
        text = _render(changes, fmt)
        if out is None:
            typer.echo(text, nl=False)
        else:
            write_text(out, text, f"{len(changes)} changes ({fmt})")
    if fails(changes, fail_on):
        raise typer.Exit(1)


def _render(changes: Sequence[Change], fmt: str) -> str:
    if fmt == "json":
        return json_lines(c.to_dict() for c in changes)
    if fmt == "sarif":
        return json.dumps(to_sarif(changes), indent=2, ensure_ascii=False, default=str) + "\n"
    return "".join(f"{c.change_class} {c.tool or '(error contract)'} {c.kind} {c.pointer or '/'}\n" for c in changes)


def _shown(value: Any, skip: int = 0) -> str:
    """A value on one line, from where it starts to differ (`skip` characters in), at most 80 characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = ("..." + text[skip:]) if skip > 3 else text
    return text if len(text) <= 80 else text[:77] + "..."


def _old_new(old: Any, new: Any) -> str:
    skip = 0
    if isinstance(old, str) and isinstance(new, str):
        while skip < min(len(old), len(new)) and old[skip] == new[skip]:
            skip += 1
        skip = max(0, skip - 20)
    return f"{_shown(old, skip)} -> {_shown(new, skip)}"


def render_text(changes: Sequence[Change]) -> None:
    """One line a change, grouped by tool, then the count per class."""
    tool = None
    for c in changes:
        if c.tool != tool:
            tool = c.tool
            console.print(Text(tool or "(error contract)", style="bold"))
        line = Text("  ")
        line.append(f"{c.change_class:<11}", style=_STYLE[c.change_class])
        line.append(f" {c.kind}", style="bold")
        line.append(f"  {c.part} {c.pointer or '/'}", style="dim")
        if c.part != "tools" and (c.old is not None or c.new is not None):
            line.append(f"\n              {_old_new(c.old, c.new)}")
        console.print(line)
    by = counts(changes)
    console.print(Text(f"{len(changes)} changes: " + ", ".join(f"{by[k]} {k}" for k in CLASSES)))


def to_sarif(changes: Sequence[Change]) -> dict[str, Any]:
    """SARIF 2.1.0 in the linter's shape: one rule a change kind, one result a change located by tool and
    pointer."""
    kinds = list(RULES.values())
    index = {r.kind: i for i, r in enumerate(kinds)}
    rules = [{"id": r.kind, "name": r.kind, "shortDescription": {"text": r.why},
              "properties": {"keeps": r.keeps, "behavioural": r.behavioural}} for r in kinds]
    results = [{
        "ruleId": c.kind, "ruleIndex": index[c.kind], "level": _SARIF_LEVEL[c.change_class],
        "message": {"text": f"{c.change_class}: {c.kind} in {c.part} ({c.why})"},
        "locations": [{"logicalLocations": [{"name": c.tool or "error_contract", "kind": "object",
                                             "fullyQualifiedName": f"{c.tool}{c.pointer}"}]}],
        "properties": {"tool": c.tool, "part": c.part, "pointer": c.pointer, "class": c.change_class,
                       "keeps": c.keeps},
    } for c in changes]
    driver = {"name": "toolproof-diff", "version": __version__, "rules": rules,
              "informationUri": "https://github.com/toolproof/toolproof/blob/main/docs/versions.md"}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{"tool": {"driver": driver}, "results": results}]}


def register(app: typer.Typer) -> None:
    app.command("diff")(diff_cmd)
