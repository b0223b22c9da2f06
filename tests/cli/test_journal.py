"""`toolproof journal ...` as a real subprocess on a real SQLite journal that a Runner wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli._run import fill, json_lines, toolproof_cli


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'j.sqlite3'}"


def test_list_show_resolve_prune(url: str) -> None:
    keys = fill(url)
    listed = json_lines(toolproof_cli("journal", "list", "--status", "unknown", "--json", "--store", url).stdout)
    assert [r["key"] for r in listed] == [keys["unknown"]]
    assert "2 entries in" in toolproof_cli("journal", "list", "-s", url).stdout
    (shown,) = json_lines(toolproof_cli("journal", "show", keys["unknown"], "--json", "-s", url).stdout)
    assert shown["status"] == "unknown"
    assert "status: unknown" in toolproof_cli("journal", "show", keys["unknown"], "-s", url).stdout

    resolved = toolproof_cli("journal", "resolve", keys["unknown"], "--done", "--result", '{"invoice_id": 9}',
                             "--note", "found in billing", "--json", "--store", url)
    (left,) = json_lines(resolved.stdout)
    assert left["was"] == "unknown" and left["entry"]["status"] == "done"
    assert left["entry"]["resolution"] == "found in billing"
    assert left["entry"]["outcome"]["result"] == {"invoice_id": 9}

    assert "pruned 0 entries" in toolproof_cli("journal", "prune", "--store", url).stdout
    assert "pruned 2 entries" in toolproof_cli("journal", "prune", "--older-than", "0s", "--store", url).stdout


def test_bad_input_is_exit_2(url: str) -> None:
    key = fill(url)["unknown"]
    for args in (["resolve", key], ["resolve", key, "--not-done", "--result", "1"],
                 ["resolve", key, "--done", "--result", "{bad"], ["list", "--status", "bogus"],
                 ["prune", "--older-than", "soon"], ["resolve", key, "--done", "--force"]):
        proc = toolproof_cli("journal", *args, "--store", url, code=2)
        assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    assert "unsupported store URL" in toolproof_cli("journal", "list", "--store", "redis://x", code=2).stderr


def test_not_done_on_a_done_entry_is_refused_and_changes_nothing(url: str) -> None:
    """The old CLI printed "status": "done" and deleted the entry, so the next identical call sent again."""
    key = fill(url)["done"]
    refused = toolproof_cli("journal", "resolve", key, "--not-done", "--store", url, code=1)
    assert "is done, not unknown" in refused.stderr and "--force" not in refused.stdout
    (entry,) = json_lines(toolproof_cli("journal", "show", key, "--json", "-s", url).stdout)
    assert entry["status"] == "done" and entry["outcome"]["result"] == {"invoice_id": 4}
    toolproof_cli("journal", "resolve", key, "--done", "-s", url, code=1)  # done again: refused too


def test_force_needs_a_note_and_is_audited_and_prints_what_it_left(url: str) -> None:
    key = fill(url)["done"]
    toolproof_cli("journal", "resolve", key, "--not-done", "--force", "-s", url, code=2)
    forced = toolproof_cli("journal", "resolve", key, "--not-done", "--force", "--note", "refunded by hand",
                           "--json", "-s", url)
    assert json_lines(forced.stdout) == [{"key": key, "was": "done", "entry": None}]
    toolproof_cli("journal", "show", key, "-s", url, code=1)
    text = toolproof_cli("journal", "list", "-s", url).stdout
    assert key not in text
    audit = json_lines(toolproof_cli("audit", "tail", "--json", "-s", url).stdout)
    (row,) = [r for r in audit if r["outcome"] == "reconciled"]
    assert row["idempotency_key"] == key and row["code"] == "RECONCILED_FORCED"
    assert row["arguments"] == {"reconciled": "not_done", "was": "done", "force": True, "note": "refunded by hand"}


def test_not_done_on_an_unknown_entry_releases_it_and_says_so(url: str) -> None:
    key = fill(url)["unknown"]
    text = toolproof_cli("journal", "resolve", key, "--not-done", "--note", "not in billing", "-s", url).stdout
    assert f"{key}: was unknown, now released" in text and "dispatched again" in text
    toolproof_cli("journal", "show", key, "-s", url, code=1)
    (stop,) = json_lines(toolproof_cli("stops", "list", "--status", "resolved", "--json", "-s", url).stdout)
    assert stop["idempotency_key"] == key and stop["effect_status"] == "not_done"


def test_store_from_the_environment(url: str) -> None:
    key = fill(url)["unknown"]
    proc = toolproof_cli("journal", "list", "--status", "unknown", "--json", env={"TOOLPROOF_STORE": url})
    assert [r["key"] for r in json_lines(proc.stdout)] == [key]
