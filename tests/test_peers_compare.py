"""The peer comparison script (`python -m benchmarks.peers.compare`) runs without any peer installed and
measures toolproof's column for real: a SQLite orders table, the public Runner, a scripted model.

The peers are hidden here on purpose (CI does not install the `peers` extra): their columns must then say
"not installed", and nothing about them is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.peers import compare


@pytest.fixture
def no_peers(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("pydantic_ai", "agents", "mcp.server.mcpserver"):
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
    assert markdown.count("not installed") == 3 * len(compare.SCENARIOS)


def test_update_doc_replaces_only_the_table(tmp_path: Path) -> None:
    doc = tmp_path / "peers.md"
    doc.write_text(f"# Peers\nbefore\n{compare.DOC_START}\nold table\n{compare.DOC_END}\nafter\n")
    compare.update_doc(doc, "| a | b |")
    assert doc.read_text() == f"# Peers\nbefore\n{compare.DOC_START}\n| a | b |\n{compare.DOC_END}\nafter\n"
