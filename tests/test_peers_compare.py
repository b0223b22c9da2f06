"""The peer comparison script (`python -m benchmarks.peers.compare`) runs without any peer installed and
measures toolproof's column for real: a SQLite orders table, the public Runner, a scripted model.

The peers are hidden here on purpose (CI does not install the `peers` extra): their columns must then say
"not installed", and nothing about them is asserted. The double-effect rows of the frameworks and the
once-only libraries run for real where installed (each row is measured, or says "not installed").
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.peers import compare


@pytest.fixture
def no_peers(monkeypatch: pytest.MonkeyPatch) -> None:
    hidden = ("pydantic_ai", "agents", "mcp.server.mcpserver", "langgraph.prebuilt",
              "toolproof.integrations.pydantic_ai", "toolproof.integrations.openai_agents",
              "toolproof.integrations.langchain", "langchain.agents.middleware", "mcp.client._memory",
              "fastmcp.server.middleware.error_handling", "call4agents", "idemkit", "once", "agent_outbox",
              "deduplex", "agent_runtime_governance")
    for name in hidden:
        monkeypatch.setitem(sys.modules, name, None)  # `import` of a None entry raises ImportError


async def test_toolproof_column_is_measured_and_peers_say_not_installed(no_peers: None) -> None:
    results = await compare.run_all()
    toolproof = results["peers"]["toolproof"]
    assert toolproof["installed"] is True
    for name, peer in results["peers"].items():
        if name != "toolproof":
            assert peer["installed"] is False
    obs = toolproof["observations"]

    # Scenarios 1-3: rejected before the body ran, with the field named, as JSON.
    for key, field in [("1", "discount"), ("2", "crop"), ("3a", "quantity_kg"), ("3b", "delivery_date"),
                       ("3c", "delivery_date")]:
        assert obs[key]["bodies"] == 0 and obs[key]["rows"] == 0, key
        assert obs[key]["cell"].startswith("rejected: field"), obs[key]["cell"]
        assert f'"field": "{field}"' in obs[key]["replies"][0]["text"]
    assert obs["2"]["cell"] == "rejected: field+allowed values (structured)"

    # Scenario 4a/4b: the body committed then raised; the model is told not to call again, so one order.
    for key in ("4a", "4b"):
        assert obs[key]["calls_sent"] == 1 and obs[key]["rows"] == 1, obs[key]["cell"]
        assert "outcome_unknown, next_action=escalate" in obs[key]["cell"]
    # Scenario 5: the async path enforces the tool timeout and reports outcome_unknown.
    assert obs["5a"]["rows"] == 1 and "outcome_unknown" in obs["5a"]["cell"]

    markdown = compare.to_markdown(results)
    header = markdown.splitlines()[0]
    assert header.startswith("| scenario | toolproof")
    peers = len(compare.DRIVERS) - 1  # every column but toolproof's: the peers, and the peers with toolproof
    assert markdown.count("not installed") == peers * len(compare.SCENARIOS)

    # The double-effect rows: the function alone takes effect twice on every repeat; toolproof's journal once,
    # but for the changed quantity (another operation: no operation_keys); its verify= hook settles the
    # unknown outcomes as ok and catches the ok that did nothing.
    effects = results["effects"]
    doubles = {name: {k for k, o in peer["observations"].items() if o["rows"] > 1}
               for name, peer in effects.items() if peer["installed"]}
    assert doubles == {"the function alone": {"reply_lost", "timeout_after_commit", "racing_resends",
                                              "changed_arguments", "new_request_id"},
                       "toolproof": {"changed_arguments"}, "toolproof with verify=": {"changed_arguments"}}
    verified = effects["toolproof with verify="]["observations"]
    assert verified["reply_lost"]["cell"] == verified["timeout_after_commit"]["cell"] == "1; ok, settled by verify"
    assert verified["ok_did_nothing"]["cell"] == "0; ok; caught by verify"
    assert effects["toolproof"]["observations"]["ok_did_nothing"]["cell"] == "0; ok; not caught (nothing asks the shop)"
    assert effects["toolproof"]["observations"]["new_request_id"]["cell"] == "1; ok → ok (replayed)"
    table = compare.to_effects_markdown(results)
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(compare.EFFECT_DRIVERS)
    assert sum(line.count("not installed") for line in rows) == (len(compare.EFFECT_DRIVERS) - 3) * 7
    assert "`worker_killed`: not staged here" in table
    short = compare.to_effects_summary(results)
    alone = "| the function alone | 4 of 5 | reply_lost, timeout_after_commit, racing_resends, new_request_id | - |"
    assert alone in short
    assert f"| {effects['toolproof with verify=']['title']} | 0 of 5 | - | - |" in short


def test_update_doc_replaces_only_the_table(tmp_path: Path) -> None:
    doc = tmp_path / "peers.md"
    doc.write_text(f"# Peers\nbefore\n{compare.DOC_START}\nold table\n{compare.DOC_END}\nafter\n")
    compare.update_doc(doc, "| a | b |")
    assert doc.read_text() == f"# Peers\nbefore\n{compare.DOC_START}\n| a | b |\n{compare.DOC_END}\nafter\n"


@pytest.mark.parametrize("module", ["_pydantic_ai_toolproof", "_openai_agents_toolproof", "_langgraph_toolproof"])
async def test_each_framework_with_toolproof_is_measured_through_its_adapter(module: str, tmp_path: Path) -> None:
    """The frameworks are in the dev extra, so their "with toolproof" columns run here for real: the coerced
    number is rejected before the body runs, and a stubborn model's resend of a lost write is not dispatched."""
    driver = next(d for d in compare.drivers() if d.__name__.endswith(module))
    assert driver.available()
    scenarios = {s.key: s for s in compare.SCENARIOS}
    coerced = await compare.run_one(driver, scenarios["3a"], tmp_path)
    assert coerced.bodies == 0 and coerced.replies[0].summary == "invalid_argument, next_action=repair"
    assert "quantity_kg" in coerced.replies[0].text
    lost = await compare.run_one(driver, scenarios["4c"], tmp_path)
    assert lost.calls_sent == 2 and lost.bodies == 1 and lost.rows == 1, lost
    assert lost.replies[1].error and "outcome_unknown" in lost.replies[1].summary


def test_update_readme_replaces_the_summary_with_short_cells(tmp_path: Path) -> None:
    scenarios = [{"key": "3a", "kind": "coerce"}, {"key": "4c", "kind": "effect"}, {"key": "9", "kind": "extra"}]
    lost = {"cell": "", "replies": [{"summary": "outcome_unknown, next_action=escalate, idempotency_key=k",
                                     "text": "{}"}], "escaped": None, "calls_sent": 2, "bodies": 1, "rows": 1}
    coerced = {"cell": "", "replies": [], "escaped": None, "calls_sent": 1, "bodies": 1, "rows": 1}
    results = {"date": "d", "python": "3", "scenarios": scenarios, "peers": {
        "a": {"title": "A", "installed": True, "observations": {"3a": coerced, "4c": lost}},
        "b": {"title": "B", "installed": False}}}
    summary = compare.to_summary(results)
    assert summary.splitlines()[2] == '| `"100"` for a number | coerced to 100.0, body ran | not installed |'
    assert "`outcome_unknown`, `escalate`, the key attached; resent, not dispatched: 1 order" in summary
    doc = tmp_path / "README.md"
    doc.write_text(f"x\n{compare.SUMMARY_START}\nold\n{compare.SUMMARY_END}\ny\n")
    compare.update_doc(doc, summary, (compare.SUMMARY_START, compare.SUMMARY_END))
    assert doc.read_text() == f"x\n{compare.SUMMARY_START}\n{summary}\n{compare.SUMMARY_END}\ny\n"


#: Per double-effect driver beyond toolproof's: its orders after the lost reply and after the race.
ROWS = {"_langgraph": (1, 2), "_langchain_retry": (2, 2), "_langchain_retry_toolproof": (1, 1),
        "_fastmcp_retry": (2, 2), "_mcp_toolproof": (1, 1), "_once_libraries:call4agents": (1, 1),
        "_once_libraries:idemkit": (2, 1), "_once_libraries:agent_once": (1, 1),
        "_once_libraries:agent_outbox": (1, 1), "_once_libraries:deduplex": (1, 1),
        "_once_libraries:governance": (2, 1)}


@pytest.mark.parametrize("name", sorted(ROWS))
async def test_each_double_effect_row_is_measured_where_installed(name: str, tmp_path: Path) -> None:
    """Where the library is installed (the `peers` extra; the frameworks are in the dev extra), the lost reply
    and the race are run through it for real and the orders counted; where it is not, its row says so."""
    assert name in compare.EFFECT_DRIVERS
    (driver,) = compare.drivers((name,))
    scenarios = {s.key: s for s in compare.EFFECT_SCENARIOS}
    if not driver.available():
        results = {"effect_scenarios": [{"key": "reply_lost"}], "not_staged": {}, "date": "d", "python": "3",
                   "effects": {name: {"title": driver.NAME, "installed": False}}}
        assert f"| {driver.NAME} | not installed |" in compare.to_effects_markdown(results)
        return
    lost = await compare.run_one(driver, scenarios["reply_lost"], tmp_path)
    race = await compare.run_one(driver, scenarios["racing_resends"], tmp_path)
    assert (lost.rows, race.rows) == ROWS[name], (compare.effect_cell(scenarios["reply_lost"], lost),
                                                  compare.effect_cell(scenarios["racing_resends"], race))
    assert race.calls_sent == 2 and (lost.replies or lost.escaped)


def test_update_doc_and_readme_replace_the_double_effect_tables(tmp_path: Path) -> None:
    observed = {"rows": 2, "cell": "**2 DOUBLE**; ok → ok"}
    once = {"rows": 1, "cell": "1; ok"}
    results = {"date": "d", "python": "3", "not_staged": {"worker_killed": "needs a process"},
               "effect_scenarios": [{"key": k} for k in compare.REPEATS],
               "effects": {"a": {"title": "A 1", "installed": True,
                                 "observations": {k: observed if k == "racing_resends" else once
                                                  for k in compare.REPEATS}},
                           "b": {"title": "B", "installed": False}}}
    summary = compare.to_effects_summary(results)
    assert summary.splitlines()[2:4] == ["| A 1 | 1 of 5 | racing_resends | - |", "| B | not installed | | |"]
    doc = tmp_path / "README.md"
    doc.write_text(f"x\n{compare.EFFECTS_SUMMARY_START}\nold\n{compare.EFFECTS_SUMMARY_END}\ny\n")
    compare.update_doc(doc, summary, (compare.EFFECTS_SUMMARY_START, compare.EFFECTS_SUMMARY_END))
    assert doc.read_text() == f"x\n{compare.EFFECTS_SUMMARY_START}\n{summary}\n{compare.EFFECTS_SUMMARY_END}\ny\n"
    table = compare.to_effects_markdown(results)
    assert "| A 1 | 1; ok | 1; ok | **2 DOUBLE**; ok → ok \\| x |" not in table  # cells are escaped, not split
    assert table.splitlines()[2].startswith("| A 1 | 1; ok | 1; ok | **2 DOUBLE**; ok → ok |")
    assert "`worker_killed`: not staged here, it needs a process." in table
