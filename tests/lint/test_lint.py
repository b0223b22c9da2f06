"""The linter on the wholesaler's toolsets, every input format, the reports, config and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._data import REPO_ROOT, corpus
from toolproof.contract._errors import DefinitionError
from toolproof.examples.wholesaler import toolset as new_toolset
from toolproof.examples.wholesaler.old_tools import old_toolset
from toolproof.lint import (
    LintConfig,
    from_definitions,
    from_toolset,
    lint,
    lint_tooldefs,
    load_mcp_command,
    load_mcp_url,
)
from toolproof.lint.report import to_sarif

ENV = {"PYTHONPATH": f"{REPO_ROOT / 'src'}:{REPO_ROOT}"}


def test_new_six_have_no_error_or_warning() -> None:
    assert [f for f in lint(new_toolset) if f.at_least("warning")] == []


def test_old_nine_produce_the_articles_findings() -> None:
    found = lint(old_toolset)
    by = {(f.code, f.tool) for f in found}
    assert {("TP104", "search"), ("TP104", "get_data")} <= by  # generic names
    assert {("TP402", "rates"), ("TP402", "price_lookup"), ("TP402", "order"), ("TP402", "order_v2")} <= by
    assert ("TP103", "order_v2") in by and ("TP404", "order") in by and ("TP404", "order_v2") in by
    quantity = [f for f in found if f.code == "TP302" and f.tool == "order"]
    assert quantity and quantity[0].pointer == "/inputSchema/properties/quantity"
    assert ("TP304", "order") in by and ("TP501", "order") in by
    lookalike = next(f for f in found if f.code == "TP402" and f.tool == "rates")
    assert "price_lookup" in lookalike.message  # each side names the other


def test_formats_are_detected_and_pointers_follow_them() -> None:
    schema = {"type": "object", "properties": {"weight": {"type": "number"}}}
    openai = [{"type": "function", "function": {"name": "ship", "description": "Ship.", "parameters": schema}}]
    anthropic = [{"name": "ship", "description": "Ship.", "input_schema": schema}]
    bfcl = [{"name": "ship", "description": "Ship.", "parameters": {**schema, "type": "dict"}}]
    mcp = {"tools": [{"name": "ship", "description": "Ship.", "inputSchema": schema}]}
    pointers = {}
    for label, data in (("openai", openai), ("anthropic", anthropic), ("bfcl", bfcl), ("mcp", mcp)):
        tools = from_definitions(data)
        assert tools[0].format == label
        pointers[label] = {f.pointer for f in lint(tools) if f.code == "TP302"}
    assert pointers["openai"] == {"/function/parameters/properties/weight"}
    assert pointers["anthropic"] == {"/input_schema/properties/weight"}
    assert pointers["mcp"] == {"/inputSchema/properties/weight"}
    assert any(f.code == "TP313" for f in lint(from_definitions(bfcl)))


def test_config_select_ignore_severity_and_per_tool(tmp_path: Path) -> None:
    py = tmp_path / "pyproject.toml"
    py.write_text('[tool.toolproof.lint]\nignore = ["TP2"]\nseverity = {"name-generic" = "error"}\n'
                  'per-tool-ignores = {"order*" = ["TP501"]}\nthresholds = {max-params = 1}\n')
    cfg = LintConfig.from_pyproject(py)
    found = lint(old_toolset, cfg)
    assert not any(f.code.startswith("TP2") for f in found)
    assert {f.severity for f in found if f.code == "TP104"} == {"error"}
    assert not any(f.code == "TP501" and f.tool.startswith("order") for f in found)
    assert any(f.code == "TP308" for f in found)
    with pytest.raises(DefinitionError):
        LintConfig.from_mapping({"selekt": ["TP1"]})
    with pytest.raises(DefinitionError):
        lint(old_toolset, LintConfig(select=("TP999",)))


def test_sarif_shape() -> None:
    sarif = to_sarif(lint(old_toolset))
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert all(res["ruleId"] in ids and res["level"] in ("error", "warning", "note") for res in run["results"])


@settings(max_examples=150, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=5),
                    max_leaves=30))
def test_any_json_lints_or_fails_clearly(value: object) -> None:
    try:
        tools = from_definitions(value)
    except DefinitionError:
        return
    for f in lint(tools):
        assert f.code.startswith("TP") and f.severity in ("error", "warning", "advice")


def test_deep_nesting_does_not_recurse_forever() -> None:
    node: dict[str, object] = {"type": "string"}
    for _ in range(3000):
        node = {"type": "object", "properties": {"x": node}}
    found = lint([{"name": "get_deep", "description": "Get a deep thing.", "inputSchema": node}])
    assert any(f.code == "TP311" for f in found)


def _cli(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolproof", "lint", *args], capture_output=True, text=True,
                          cwd=cwd, env={**ENV, "PATH": "/usr/bin:/bin"}, timeout=120)


@pytest.mark.e2e
def test_cli_exit_codes_and_json(tmp_path: Path) -> None:
    new = _cli("toolproof.examples.wholesaler:toolset", "--json")
    assert new.returncode == 0 and new.stdout == ""
    old = _cli("toolproof.examples.wholesaler.old_tools:old_toolset", "--json")
    assert old.returncode == 1  # TP404 versioned twin is an error
    rows = [json.loads(line) for line in old.stdout.splitlines()]
    assert set(rows[0]) >= {"code", "rule", "severity", "tool", "pointer", "message", "fix"}
    assert _cli("toolproof.examples.wholesaler.old_tools:old_toolset", "--ignore", "TP404").returncode == 0
    old_target = "toolproof.examples.wholesaler.old_tools:old_toolset"
    assert _cli(old_target, "--ignore", "TP404", "--fail-on", "warning").returncode == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = _cli(str(bad))
    assert res.returncode == 2 and "JSONL" in res.stderr


@pytest.mark.e2e
def test_cli_sarif_on_a_corpus_file() -> None:

    res = _cli(str(corpus("mcp_tools", "mcp_reference_servers_tools.jsonl")), "--format", "sarif")
    assert json.loads(res.stdout)["runs"][0]["results"]


@pytest.mark.e2e
def test_live_mcp_server_over_stdio() -> None:
    """A real MCP server (the reference `time` server, installed) started as a subprocess."""
    tools = load_mcp_command(f"{sys.executable} -m mcp_server_time")
    assert {t.name for t in tools} >= {"get_current_time", "convert_time"}
    found = lint(tools)
    assert any(f.code == "TP304" and f.tool == "convert_time" for f in found)
    with pytest.raises(DefinitionError):
        load_mcp_command(f"{sys.executable} -c 'import sys; sys.exit(3)'", timeout_s=10)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.e2e
def test_live_mcp_server_over_streamable_http() -> None:
    """A real MCP server over HTTP in a subprocess; linted through the library and the CLI's --mcp-url."""
    import socket
    import time

    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("mcp_http_server.py")), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        url = f"http://127.0.0.1:{port}/mcp"
        tools = load_mcp_url(url)
        assert {t.name for t in tools} == {"search", "get_order_status"}
        found = lint(tools)
        assert any(f.code == "TP104" and f.tool == "search" for f in found)
        twice = load_mcp_url(url, relist=True)  # registration order, the same on both listings
        assert twice[0].relisted_names == ("search", "get_order_status")
        assert lint(twice, LintConfig(select=("TP406",))) == []
        res = _cli("--mcp-url", url, "--json", "--fail-on", "warning")
        assert res.returncode == 1 and any(json.loads(line)["tool"] == "search" for line in res.stdout.splitlines())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_duplicate_names_across_sources_and_missing_schema() -> None:
    old = from_toolset(old_toolset, "old")
    other = from_definitions({"tools": [{"name": "search", "description": "Search the catalogue for a crop."}]},
                             source="catalogue.json")
    found = lint_tooldefs([*old, *other])
    dup = [f for f in found if f.code == "TP403"]
    assert {f.source for f in dup} == {"old", "catalogue.json"}
    assert any(f.code == "TP317" and f.source == "catalogue.json" for f in found)  # no inputSchema at all
    one_source = from_definitions([{"name": "search", "inputSchema": {"type": "object"}}] * 2)
    assert sum(f.code == "TP403" for f in lint(one_source)) == 2  # twice in one toolset


def test_hostile_definitions_give_findings_not_crashes() -> None:
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    tools = from_definitions([
        {"name": "überprüfen", "description": "x" * 200_000, "inputSchema": {"type": "object", "properties": {
            "a": {"type": {"nested": True}}, "b": {"type": "string", "default": deep},
            "c": {"type": "array"}}, "required": ["a", 7]}},
        {"name": 42, "description": None, "inputSchema": ["not", "a", "schema"]},
        "not a tool",
    ])
    codes = {(f.tool, f.code) for f in lint(tools)}
    assert ("überprüfen", "TP105") in codes and ("überprüfen", "TP313") in codes
    assert ("überprüfen", "TP309") in codes and ("überprüfen", "TP316") in codes
    assert ("42", "TP105") in codes and ("42", "TP317") in codes and ("None", "TP105") in codes
    with pytest.raises(DefinitionError):
        lint(None)


def test_messages_name_only_the_tools_being_linted() -> None:
    """Messages and fixes for a toolset that is not the wholesaler's speak of its own tools, never of the
    examples the rules were written from (order_order, get_today_price, the buyer, quintals, shop_search)."""
    definitions = [
        {"name": name, "description": description, "inputSchema": {
            "type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}}
        for name, description in (("search", "Search."), ("order", "Order things."), ("rates", "Rates of a pair."),
                                  ("Ship.Parcel", "Ship a parcel to an address."))
    ]
    found = lint(from_definitions(definitions, source="a.json") + from_definitions(definitions[:1], source="b.json"))
    assert {f.code for f in found} >= {"TP102", "TP104"}
    text = " ".join(f"{f.message} {f.fix}" for f in found)
    for foreign in ("order_order", "get_today_price", "get_order_status", "buyer", "quintal", "shop_search",
                    "onion"):
        assert foreign not in text, foreign
    assert "'order_<thing>'" in text and "'get_rates'" in text
