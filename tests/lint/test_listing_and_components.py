"""TP406 (a server's tools/list order changes between two listings) and TP208 (description components
missing, with the description's token cost): each with a planted positive and a clean negative. TP406 runs
against real stdio servers built on the official SDK."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._data import REPO_ROOT
from toolproof.examples.wholesaler.old_tools import old_toolset
from toolproof.lint import (
    LintConfig,
    active_rules,
    from_definitions,
    from_toolset,
    lint,
    lint_tooldefs,
    load_mcp_command,
    relisted,
)
from toolproof.lint._rules._components import missing_components

ENV = {"PYTHONPATH": f"{REPO_ROOT / 'src'}:{REPO_ROOT}", "PATH": "/usr/bin:/bin"}
ORDER = LintConfig(select=("TP406",))
REORDERING = f"{sys.executable} -m tests.lint.mcp_reordering_server"


def _listing(*names: str) -> dict[str, Any]:
    return {"tools": [{"name": n, "description": f"Get the {n}.", "inputSchema": {"type": "object"}} for n in names]}


# --- TP406 toolset-order-unstable --------------------------------------------------------------------------------

def test_a_second_listing_in_another_order_is_reported_once_at_the_first_difference() -> None:
    first = from_definitions(_listing("get_a", "get_b", "get_c"), source="mcp:x")
    found = lint_tooldefs(relisted(first, ["get_a", "get_c", "get_b"]), ORDER)
    assert [(f.code, f.tool, f.pointer, f.severity) for f in found] == [("TP406", "", "/tools/1", "warning")]
    assert "position 2 held 'get_b' the first time and 'get_c' the second" in found[0].message
    assert found[0].fix.startswith("Sort tools/list by name or keep registration order")
    assert found[0].source == "mcp:x"


def test_the_same_order_twice_is_clean_and_a_changed_count_is_not() -> None:
    first = from_definitions(_listing("get_a", "get_b"), source="mcp:x")
    assert lint_tooldefs(relisted(first, ["get_a", "get_b"]), ORDER) == []
    grown = lint_tooldefs(relisted(first, ["get_a", "get_b", "get_c"]), ORDER)
    assert [f.pointer for f in grown] == ["/tools/2"] and "2 tools, then 3" in grown[0].message


def test_code_and_file_targets_are_never_relisted() -> None:
    """A Python toolset or a file has one listing: TP406 has nothing to compare, even with every rule on."""
    every = LintConfig(select=("ALL",))
    assert not [f for f in lint(old_toolset, every) if f.code == "TP406"]
    assert not [f for f in lint(_listing("get_b", "get_a"), every) if f.code == "TP406"]
    assert all(t.relisted_names is None for t in from_toolset(old_toolset))


def test_tp406_is_on_by_default() -> None:
    codes = {r.code for r in active_rules(LintConfig())}
    assert "TP406" in codes and "TP208" not in codes


@pytest.mark.e2e  # starts real stdio MCP servers
def test_a_live_server_that_reorders_is_caught_and_a_stable_one_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", ENV["PYTHONPATH"])  # the servers are `-m tests...` and the test runs elsewhere
    tools = load_mcp_command(REORDERING, relist=True)
    assert [t.label for t in tools] == ["get_order", "cancel_order", "ship_order", "refund_order"]
    found = lint_tooldefs(tools, ORDER)
    assert [(f.code, f.pointer) for f in found] == [("TP406", "/tools/0")]
    assert "'get_order' the first time and 'cancel_order' the second" in found[0].message
    assert lint_tooldefs(load_mcp_command(REORDERING), ORDER) == []  # listed once: nothing to compare
    stable = _drifting(tmp_path)
    assert lint_tooldefs(load_mcp_command(stable, relist=True), ORDER) == []
    assert len((tmp_path / "lists.jsonl").read_text().splitlines()) == 2


def _drifting(tmp_path: Path) -> str:
    """The drifting test server over a fixed file: the same order on every listing, each listing counted."""
    definitions = _listing("get_order", "cancel_order", "ship_order")["tools"]
    (tmp_path / "tools.json").write_text(json.dumps(definitions), encoding="utf-8")
    return f"{sys.executable} -m tests.mcp_servers.drifting {tmp_path / 'tools.json'} --lists {tmp_path}/lists.jsonl"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolproof", "lint", *args], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=ENV, timeout=120)


@pytest.mark.e2e  # the CLI against real stdio MCP servers
def test_the_cli_lists_twice_only_while_tp406_is_on(tmp_path: Path) -> None:
    res = _cli("--mcp-command", REORDERING, "--select", "TP406", "--json", "--fail-on", "warning")
    assert res.returncode == 1, res.stderr
    assert [json.loads(line)["code"] for line in res.stdout.splitlines()] == ["TP406"]
    lists = tmp_path / "lists.jsonl"
    assert _cli("--mcp-command", _drifting(tmp_path), "--select", "TP406").returncode == 0
    assert len(lists.read_text().splitlines()) == 2
    lists.unlink()
    assert _cli("--mcp-command", _drifting(tmp_path), "--ignore", "TP406").returncode in (0, 1)
    assert len(lists.read_text().splitlines()) == 1  # --ignore TP406 costs one listing


# --- TP208 description-components ----------------------------------------------------------------------------

COMPONENTS = LintConfig(select=("TP208",))
FULL = ("Get one order's status by its id. Use this when the buyer asks about an order they placed; do not use "
        "it to place orders. Only orders of the last 90 days are found. Returns the status, e.g. 'shipped'.")
ORDER_ID = {"order_id": {"type": "integer"}}  # named in FULL ("order's ... id"), so explained


def _tool(description: str, properties: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": ORDER_ID if properties is None else properties}
    return {"name": "get_order_status", "description": description, "inputSchema": schema, **extra}


def _missing(description: str, properties: dict[str, Any] | None = None, **extra: Any) -> list[str]:
    tools = from_definitions([_tool(description, properties, **extra)])
    return missing_components(tools[0])


def test_a_description_with_all_six_components_is_clean() -> None:
    assert _missing(FULL) == []
    assert lint([_tool(FULL)], COMPONENTS) == []


@pytest.mark.parametrize(("description", "lacks"), [
    # purpose: the first sentence leads with no action
    (FULL.replace("Get one order's status by its id.", "Status of one order, by its id."), "purpose"),
    # guidelines: no when (not) to use; an example marker ("e.g.") is not a guideline
    (FULL.replace("Use this when the buyer asks about an order they placed; do not use it to place orders.",
                  "The status comes from the warehouse system of record, refreshed every few minutes."), "guidelines"),
    # limitations: nothing it cannot do
    (FULL.replace("Only orders of the last 90 days are found.", "The buyer sees the same status."), "limitations"),
    # length: every other component, in under 20 words
    ("Get an order's status by id. Use it for buyers. Only recent orders, e.g. 'shipped'.", "length"),
    # examples: none in the description, the schema or the tool
    (FULL.replace(", e.g. 'shipped'", ""), "examples"),
])
def test_each_missing_component_is_named_alone(description: str, lacks: str) -> None:
    assert _missing(description) == [lacks]


def test_parameters_are_explained_in_the_schema_or_named_in_the_description() -> None:
    assert _missing(FULL, {"order_id": {"type": "integer"}, "since": {"type": "string"}}) == [
        "parameters (since explained nowhere)"]
    described = {"order_id": {"type": "integer"}, "since": {"type": "string", "description": "Earliest date."}}
    assert _missing(FULL, described) == []
    assert _missing(FULL, {}) == []  # no parameters: nothing to explain


def test_examples_anywhere_count() -> None:
    bare = FULL.replace(", e.g. 'shipped'", "")
    assert _missing(bare, examples=[{"order_id": 7}]) == []
    assert _missing(bare, {"order_id": {"type": "integer", "examples": [7]}}) == []


def test_the_finding_gives_the_token_cost_and_says_it_is_an_estimate() -> None:
    text = "Order status."
    found = lint([_tool(text)], COMPONENTS)
    assert [(f.code, f.pointer, f.severity) for f in found] == [("TP208", "/description", "advice")]
    message = found[0].message
    assert f"{len(text)} characters, about {math.ceil(len(text) / 4)} tokens" in message
    assert "estimated at 4 characters a token" in message
    assert "purpose" in message and "examples" in message
    assert "+5.85" in found[0].fix and "+67%" in found[0].fix


def test_off_by_default_and_silent_on_cjk_or_missing_descriptions() -> None:
    assert not [f for f in lint([_tool("Order status.")]) if f.code == "TP208"]
    assert lint([_tool("获取订单的状态，按订单号查询。")], COMPONENTS) == []
    assert lint([_tool("")], COMPONENTS) == []  # TP201's
