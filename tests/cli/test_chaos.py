"""`toolproof chaos` as a user runs it: a real subprocess, off a terminal, in a folder of its own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import toolproof
from tests.cli._run import json_lines, toolproof_cli

OLD = "tests.chaos._targets:old_tools"
NEW = "tests.chaos._targets:new_tools"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"CHAOS_SHOP": str(tmp_path / "orders.sqlite3")}


def test_fail_on_double_effect_exits_1_on_the_old_tools_bare_and_0_on_the_new_tools(
        tmp_path: Path, env: dict[str, str]) -> None:
    old = toolproof_cli("chaos", OLD, "--tool", "order", "--through", "bare", "--scenario", "reply_lost",
                        "--fail-on", "double-effect", cwd=tmp_path, env=env, code=1)
    assert "2 DOUBLE" in old.stdout and "double effects: 1 of 1 observed scenarios" in old.stdout
    assert "exit 1: 1 scenario(s) took effect more than once" in old.stderr
    new = toolproof_cli("chaos", NEW, "--scenario", "reply_lost", "--scenario", "new_request_id",
                        "--fail-on", "double-effect", cwd=tmp_path, env=env, code=0)
    assert "double effects: 0 of 4 observed scenarios" in new.stdout
    assert not (tmp_path / ".toolproof").exists()  # a scratch store, never the default one


def test_json_lines_and_the_html_report(tmp_path: Path, env: dict[str, str]) -> None:
    page, lines = tmp_path / "chaos.html", tmp_path / "chaos.jsonl"
    proc = toolproof_cli("chaos", OLD, "--tool", "order", "--through", "both", "--scenario", "new_request_id",
                         "--scenario", "ok_did_nothing", "--json", "--html", str(page), "--out", str(lines),
                         cwd=tmp_path, env=env)
    rows = json_lines(proc.stdout)
    assert json_lines(lines.read_text(encoding="utf-8")) == rows
    assert [(r["through"], r["scenario"], r["effects"]) for r in rows[:-1]] == [
        ("toolproof", "new_request_id", 1), ("toolproof", "ok_did_nothing", None),
        ("bare", "new_request_id", 2), ("bare", "ok_did_nothing", None)]
    assert rows[1]["counted"] == "not observable (no verify hook)"
    assert rows[-1]["kind"] == "summary" and rows[-1]["double_effects"] == 1 and rows[-1]["observed"] == 2
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and "<svg" in html and "Double effects: 1 of 2" in html
    assert "<script" not in html
    assert f"wrote the HTML report to {page}" in proc.stderr


def test_the_journal_goes_to_a_scratch_store_unless_store_names_one(tmp_path: Path, env: dict[str, str]) -> None:
    ambient, named = tmp_path / "ambient.sqlite3", tmp_path / "named.sqlite3"
    run = ("chaos", OLD, "--tool", "order", "--scenario", "new_request_id")
    toolproof_cli(*run, cwd=tmp_path, env={**env, "TOOLPROOF_STORE": f"sqlite:///{ambient}"})
    assert not ambient.exists()  # $TOOLPROOF_STORE is the user's store: chaos never writes there by itself
    toolproof_cli(*run, "--store", f"sqlite:///{named}", cwd=tmp_path, env=env)
    store = toolproof.open_store(f"sqlite:///{named}", create=False)
    try:
        assert [(i.tool, i.status) for i in store.journal_list(limit=10)] == [("order", "done")]
    finally:
        store.close()


@pytest.mark.parametrize(("args", "message"), [
    (["nowhere_at_all:tools"], "error: cannot import 'nowhere_at_all'"),
    (["tests.chaos._targets:missing"], "error: 'tests.chaos._targets' has no attribute 'missing'"),
    (["tests.chaos._targets:MONDAY"], "error: 'tests.chaos._targets:MONDAY' is a date, not a toolproof.Toolset"),
    (["just_a_word"], "error: expected MODULE:ATTRIBUTE, got 'just_a_word'"),
    ([OLD, "--count-with", "count_orders"], "error: --count-with is for MCP servers"),
    (["stdio:"], "error: stdio: needs a command"),
    ([OLD, "--tool", "nope"], "error: 'tests.chaos._targets:old_tools' has no tool 'nope'"),
    ([OLD, "--args", "order"], "error: --args takes TOOL=JSON, got 'order'"),
    ([OLD, "--args", "order={"], "error: --args order: not JSON"),
    ([OLD, "--scenario", "meteor"], "error: no scenario 'meteor'"),
    ([OLD, "--through", "magic"], "error: --through must be one of toolproof, bare, both"),
    ([OLD, "--fail-on", "sometimes"], "error: --fail-on must be one of double-effect, never"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, env: dict[str, str], args: list[str], message: str) -> None:
    proc = toolproof_cli("chaos", *args, cwd=tmp_path, env=env, code=2)
    assert proc.stderr.startswith(message), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stdout == ""


def test_an_mcp_server_over_stdio_with_a_count_tool(tmp_path: Path) -> None:
    env = {"ORDERS_DB": str(tmp_path / "orders.sqlite3")}
    server = f"stdio:{sys.executable} -m tests.mcp_servers.orders"
    proc = toolproof_cli("chaos", server, "--count-with", "count_orders", "--scenario", "reply_lost", "--json",
                         "--fail-on", "double-effect", cwd=tmp_path, env=env, code=1)
    row, total = json_lines(proc.stdout)
    assert (row["through"], row["effects"], row["double_effect"]) == ("server", 2, True)
    assert total["double_effects"] == 1
    bad = toolproof_cli("chaos", server, "--count-with", "tally", cwd=tmp_path, env=env, code=2)
    assert bad.stderr.startswith("error: the server has no tool 'tally'")


def test_conformance_of_an_mcp_server_exits_1_when_a_check_fails(tmp_path: Path) -> None:
    env = {"ORDERS_DB": str(tmp_path / "orders.sqlite3")}
    server = f"stdio:{sys.executable} -m tests.mcp_servers.orders"
    proc = toolproof_cli("chaos", server, "--conformance", "--count-with", "count_orders", "--json",
                         "--fail-on", "double-effect", cwd=tmp_path, env=env, code=1)
    checks = json_lines(proc.stdout)
    assert [(c["check"], c["verdict"]) for c in checks] == [
        ("resend", "fail"), ("cut_stream", "fail"), ("session_per_call", "fail"),
        ("identity_conversation", "not announced"), ("identity_principal", "not announced")]
    assert "exit 1: 3 conformance check(s) failed" in proc.stderr
    text = toolproof_cli("chaos", server, "--conformance", "--tool", "place_order", cwd=tmp_path, env=env)
    assert "conformance: 0 passed, 0 failed, 5 not checked" in text.stdout  # no --count-with: nothing counted
    bad = toolproof_cli("chaos", OLD, "--conformance", cwd=tmp_path, env=env, code=2)
    assert bad.stderr.startswith("error: --conformance checks an MCP server")
    mixed = toolproof_cli("chaos", server, "--conformance", "--scenario", "reply_lost", cwd=tmp_path, env=env, code=2)
    assert mixed.stderr.startswith("error: --conformance runs its own checks")
