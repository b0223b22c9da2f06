"""The CLI's conventions hold for every command: one meaning per flag, JSON lines, one time format, plain text
that is never read as markup, wrapped or cut. Real subprocesses unless a rule is about the command tree itself."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import typer

import toolproof.examples.versions
from tests.cli._run import fill, json_lines, toolproof_cli
from toolproof.examples.wholesaler.cases import HERE

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _commands() -> dict[str, Any]:
    """Every leaf command by its full name ('journal list', 'serve', ...)."""
    from toolproof.cli import app

    found: dict[str, Any] = {}

    def walk(cmd: Any, name: str) -> None:
        if hasattr(cmd, "commands"):  # a group (typer vendors its own click)
            for sub_name, sub in cmd.commands.items():
                walk(sub, f"{name} {sub_name}".strip())
        else:
            found[name] = cmd

    walk(typer.main.get_command(app), "")
    return found


def test_no_short_flag_means_two_things() -> None:
    meanings: dict[str, set[str]] = defaultdict(set)
    for cmd in _commands().values():
        for param in cmd.params:
            longs = [o for o in param.opts if o.startswith("--")]
            for short in (o for o in param.opts if o.startswith("-") and not o.startswith("--")):
                meanings[short].add(longs[0])
    assert {s: m for s, m in meanings.items() if len(m) > 1} == {}
    assert meanings["-m"] == {"--model"} and meanings["-s"] == {"--store"} and meanings["-n"] == {"--limit"}


def test_store_limit_and_json_are_one_option_each() -> None:
    """--store/-s, --limit/-n (one default) and --json (a flag, never a path) wherever they appear."""
    from toolproof.cli._options import DEFAULT_LIMIT

    for name, cmd in _commands().items():
        for param in cmd.params:
            if "--store" in param.opts:
                assert param.opts == ["--store", "-s"] and param.default is None, name
            if "--limit" in param.opts:
                assert param.opts == ["--limit", "-n"] and param.default == DEFAULT_LIMIT, name
            if "--json" in param.opts:
                assert getattr(param, "is_flag", False), name


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The console entry point in this process, as `toolproof ARGS` runs it: (exit code, stdout, stderr)."""
    from toolproof.cli import main

    with pytest.raises(SystemExit) as ended:
        main(list(args))
    out, err = capsys.readouterr()
    return int(ended.value.code or 0), out, err


def test_every_command_keeps_the_conventions_docs_cli_promises(capsys: pytest.CaptureFixture[str]) -> None:
    """Walks the command tree: every option says what it is for, a flag is a flag (help never shows it taking a
    value), a usage error is one
    `error:` line and exit 2, a command that prints records has --json, one that renders a --format writes it
    with --out and gives its JSON as --json, and an MCP server is named in one form everywhere."""
    from toolproof.cli._options import MCP_COMMAND_HELP

    broken: list[str] = []
    mcp_forms: set[tuple[str, str | None, str]] = set()
    for name, cmd in _commands().items():
        opts = {o: p for p in cmd.params for o in p.opts}
        for param in cmd.params:
            if not getattr(param, "help", None):
                broken.append(f"{name}: {param.opts[0]} has no help")
            if param.opts[0] in ("--mcp-command", "--mcp-url"):
                mcp_forms.add((param.opts[0], param.metavar, (param.help or "").removesuffix(" Repeatable.")))
        code, out, err = _run(capsys, *name.split(), "--help")
        if code != 0 or "<bool>" in out or "--json <" in out:
            broken.append(f"{name}: --help exits {code} or shows a flag taking a value")
        code, out, err = _run(capsys, *name.split(), "--no-such-option")
        if code != 2 or out or len(err.splitlines()) != 1 or not err.startswith("error: "):
            broken.append(f"{name}: a usage error gives exit {code} and {err!r}")
        serves = "--port" in opts
        if "--store" in opts and "--out" not in opts and not serves and "--json" not in opts:
            broken.append(f"{name}: prints records without --json")
        if "--format" in opts:
            if "--out" not in opts:
                broken.append(f"{name}: renders a --format without --out")
            if "json" in (opts["--format"].help or "") and "--json" not in opts:
                broken.append(f"{name}: --format json without --json")
        if "--out" in opts and opts["--out"].opts != ["--out", "-o"]:
            broken.append(f"{name}: --out is {opts['--out'].opts}")
    assert broken == []
    assert {form for form in mcp_forms if form[0] == "--mcp-command"} == {("--mcp-command", "COMMAND",
                                                                          MCP_COMMAND_HELP)}
    assert len({form for form in mcp_forms if form[0] == "--mcp-url"}) == 1


@pytest.mark.parametrize("args", [
    ["diff", "orders_v1.json", "orders_v2.json"],
    ["lint", "toolproof.examples.wholesaler.old_tools:old_toolset"],
])
def test_json_is_one_shape_json_lines_also_as_format_json_and_in_out(
        args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    versions = Path(toolproof.examples.versions.__file__).parent
    args = [str(versions / a) if a.endswith(".json") else a for a in args]
    code, lines, _ = _run(capsys, *args, "--json")
    assert code == 1 and len(json_lines(lines)) > 1 and all(isinstance(r, dict) for r in json_lines(lines))
    assert _run(capsys, *args, "--format", "json")[:2] == (1, lines)
    code, out, err = _run(capsys, *args, "--json", "--out", str(tmp_path / "o.jsonl"))
    assert (code, out) == (1, "") and (tmp_path / "o.jsonl").read_text(encoding="utf-8") == lines
    assert len(err.splitlines()) == 1 and str(tmp_path / "o.jsonl") in err


def test_each_command_group_lives_in_the_file_named_after_it() -> None:
    from toolproof.cli import app

    cli_dir = Path(__file__).resolve().parents[2] / "src" / "toolproof" / "cli"
    top: Any = typer.main.get_command(app)
    # A command module is one that registers commands; its file is the group's name, internal (`_journal.py`).
    modules = {p.stem.removeprefix("_") for p in cli_dir.glob("*.py") if "\ndef register(" in p.read_text("utf-8")}
    assert modules == set(top.commands)


def test_json_lines_and_rfc3339_times_everywhere(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 't.sqlite3'}"
    keys = fill(url)
    for args in (["journal", "list"], ["journal", "show", keys["done"]], ["stops", "list"], ["audit", "tail"],
                 ["stops", "show", keys["auth_stop"]], ["audit", "fields"], ["audit", "fields", "--by-version"],
                 ["journal", "prune"]):
        rows = json_lines(toolproof_cli(*args, "--json", "-s", url).stdout)
        assert rows, args
        for row in rows:
            for field in ("at", "created_at", "updated_at", "lease_until", "first_seen"):
                if field in row:
                    assert RFC3339.match(row[field]), (args, field, row[field])
    for args in (["schema", "envelope"], ["classify", "http", "503"],
                 ["export", "toolproof.examples.wholesaler:toolset"]):
        assert json_lines(toolproof_cli(*args, "--json").stdout), args
    text = toolproof_cli("stops", "show", keys["auth_stop"], "-s", url).stdout
    assert re.search(r"^at: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", text, re.M)


def test_tables_off_a_terminal_never_wrap_or_cut_and_show_unique_call_ids(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a-folder-with-a-rather-long-name-to-push-lines-past-80' / 't.sqlite3'}"
    keys = fill(url)
    journal = toolproof_cli("journal", "list", "-s", url).stdout
    for key in (keys["done"], keys["unknown"]):
        assert len([line for line in journal.splitlines() if key in line]) == 1
    assert url in journal.splitlines()[-1]
    calls = {r["call_id"] for r in json_lines(toolproof_cli("audit", "tail", "--json", "-s", url).stdout)}
    tail = toolproof_cli("audit", "tail", "-s", url).stdout
    shown = [next(c for c in calls if c in line) for line in tail.splitlines() if any(c in line for c in calls)]
    assert sorted(shown) == sorted(calls) and len(calls) == 5


def test_user_text_in_brackets_is_kept(tmp_path: Path) -> None:
    config = tmp_path / "gw.toml"
    config.write_text('[upstreams.time]\ncommand = "python -m mcp_server_time"\nnme = "x"\n')
    proc = toolproof_cli("gateway", "--config", str(config), code=2)
    assert proc.stderr.startswith("error: [upstreams.time]: unknown key(s) nme")
    assert "\n" not in proc.stderr.rstrip("\n")  # one line, not wrapped at 80 columns
    url = f"sqlite:///{tmp_path / 't.sqlite3'}"
    stop = fill(url)["auth_stop"]
    assert "The bank refused the token [upstreams.bank]." in toolproof_cli("stops", "show", stop, "-s", url).stdout


def test_eval_compare_names_each_regression_in_plain_text(tmp_path: Path) -> None:
    results = {}
    for label in ("old", "new"):
        results[label] = tmp_path / f"{label}.json"
        toolproof_cli("eval", "selection", str(HERE / "selection.yaml"), "-m",
                      "replay:" + str(HERE / "recorded_selection_{label}.jsonl"), "-l", label,
                      "--out", str(results[label]))
    worse = toolproof_cli("eval", "compare", str(results["new"]), str(results["old"]), code=1)
    regressed = re.findall(r"^REGRESSED (\S+): ([\d.]+) -> ([\d.]+)", worse.stdout, re.M)
    assert regressed and "\x1b[" not in worse.stdout
    assert re.search(rf"^{len(regressed)} of \d+ metrics regressed beyond 0.02$", worse.stdout, re.M)
    deltas = json_lines(toolproof_cli("eval", "compare", str(results["new"]), str(results["old"]), "--json",
                                      code=1).stdout)
    assert sorted(d["metric"] for d in deltas if d["regressed"]) == sorted(m for m, _, _ in regressed)
    better = toolproof_cli("eval", "compare", str(results["old"]), str(results["new"]))
    assert "REGRESSED" not in better.stdout and "0 of" in better.stdout


@pytest.mark.parametrize(("headers", "body", "message"), [
    ([], '{"title": "Too many orders"}', "Too many orders"),
    (["-H", "Content-Type: application/problem+json"], '{"title": "Slow down", "detail": "10 a minute"}',
     "Slow down: 10 a minute"),
    (["-H", "Content-Type: application/problem+json"], '{"detail": "10 a minute"}', "10 a minute"),
])
def test_classify_http_honours_a_problem_details_title(headers: list[str], body: str, message: str) -> None:
    (env,) = json_lines(toolproof_cli("classify", "http", "429", *headers, "--body", body, "--json").stdout)
    assert env["error"]["class"] == "rate_limited" and env["error"]["message"] == message
