"""The CLI's conventions hold for every command: one meaning per flag, JSON lines, one time format, plain text
that is never read as markup, wrapped or cut. Real subprocesses unless a rule is about the command tree itself."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import typer

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


def test_each_command_group_lives_in_the_file_named_after_it() -> None:
    from toolproof.cli import app

    cli_dir = Path(__file__).resolve().parents[2] / "src" / "toolproof" / "cli"
    top: Any = typer.main.get_command(app)
    modules = {p.stem for p in cli_dir.glob("*.py") if not p.stem.startswith("_")}
    assert modules == set(top.commands)


def test_json_lines_and_rfc3339_times_everywhere(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 't.sqlite3'}"
    keys = fill(url)
    for args in (["journal", "list"], ["journal", "show", keys["done"]], ["stops", "list"], ["audit", "tail"],
                 ["stops", "show", keys["auth_stop"]], ["audit", "fields"], ["journal", "prune"]):
        rows = json_lines(toolproof_cli(*args, "--json", "-s", url).stdout)
        assert rows, args
        for row in rows:
            for field in ("at", "created_at", "updated_at", "lease_until"):
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
