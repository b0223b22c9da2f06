"""`toolproof stops ...` and `toolproof audit ...` as real subprocesses on a real SQLite store that a Runner wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pytest

import toolproof
from tests.cli._run import SECRET, fill, json_lines, toolproof_cli


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 's.sqlite3'}"


def test_stops_list_show_resolve(url: str) -> None:
    ids = fill(url)
    listed = json_lines(toolproof_cli("stops", "list", "--json", "-s", url).stdout)
    assert {s["code"] for s in listed} == {"AUTH_FAILED", "TIMEOUT_AFTER_DISPATCH"}
    table = toolproof_cli("stops", "list", "-s", url).stdout
    assert ids["auth_stop"] in table and "non_retryable" in table
    (shown,) = json_lines(toolproof_cli("stops", "show", ids["auth_stop"], "--json", "-s", url).stdout)
    assert shown["code"] == "AUTH_FAILED" and shown["arguments"]["api_token"] != SECRET
    resolved = toolproof_cli("stops", "resolve", ids["auth_stop"], "--note", "token rotated", "--effect", "not_done",
                             "--json", "-s", url)
    (left,) = json_lines(resolved.stdout)
    assert left["resolution"] == "token rotated" and left["resolved_at"].endswith("Z")
    assert ids["auth_stop"] in toolproof_cli("stops", "list", "--status", "resolved", "-s", url).stdout


def test_resolving_a_resolved_stop_is_refused_unless_forced(url: str) -> None:
    stop = fill(url)["auth_stop"]
    toolproof_cli("stops", "resolve", stop, "--note", "token rotated", "-s", url)
    refused = toolproof_cli("stops", "resolve", stop, "--note", "again", "-s", url, code=1)
    assert "was resolved at" in refused.stderr and "token rotated" in refused.stderr
    (kept,) = json_lines(toolproof_cli("stops", "show", stop, "--json", "-s", url).stdout)
    assert kept["resolution"] == "token rotated"
    forced = toolproof_cli("stops", "resolve", stop, "--note", "rotated twice", "--force", "-s", url).stdout
    assert f"{stop}: resolved in" in forced and "resolution: rotated twice" in forced


def test_resolving_an_unknown_write_stop_says_the_journal_still_blocks(url: str) -> None:
    key = fill(url)["unknown"]
    (stop,) = [s for s in json_lines(toolproof_cli("stops", "list", "--json", "-s", url).stdout)
               if s["idempotency_key"] == key]
    proc = toolproof_cli("stops", "resolve", stop["id"], "--note", "checked", "-s", url)
    assert f"journal entry {key} is still unknown" in proc.stderr


def test_stops_errors(url: str) -> None:
    fill(url)
    toolproof_cli("stops", "show", "stop_nope", "-s", url, code=1)
    toolproof_cli("stops", "list", "--status", "maybe", "-s", url, code=2)
    toolproof_cli("stops", "resolve", "stop_nope", "--note", "x", "-s", url, code=1)
    toolproof_cli("stops", "resolve", "stop_nope", "--note", "x", "--effect", "perhaps", "-s", url, code=2)
    assert "unsupported store URL" in toolproof_cli("stops", "list", "--store", "mongodb://nowhere", code=2).stderr


def test_audit_tail_export_fields(url: str, tmp_path: Path) -> None:
    fill(url)
    tail = toolproof_cli("audit", "tail", "--json", "-s", url).stdout
    rows = json_lines(tail)
    assert [r["validation"] for r in rows] == ["ok", "ok", "failed", "ok", "ok"]
    assert SECRET not in tail
    assert len(json_lines(toolproof_cli("audit", "tail", "-n", "2", "--json", "-s", url).stdout)) == 2
    assert "get_account" in toolproof_cli("audit", "tail", "-s", url).stdout
    out = tmp_path / "audit.jsonl"
    wrote = toolproof_cli("audit", "export", "--format", "jsonl", "--out", str(out), "-s", url)
    assert wrote.stdout == "" and f"wrote 5 audit records to {out}" in wrote.stderr
    assert json_lines(out.read_text()) == rows
    csv_out = toolproof_cli("audit", "export", "--format", "csv", "-s", url).stdout
    assert csv_out.splitlines()[0].startswith("at,call_id,tool")
    toolproof_cli("audit", "export", "--format", "xml", "-s", url, code=2)
    (field,) = json_lines(toolproof_cli("audit", "fields", "--json", "-s", url).stdout)
    assert field["tool"] == "get_account" and field["field"] == "user" and field["count"] == 1
    assert "user" in toolproof_cli("audit", "fields", "-s", url).stdout


def test_audit_show_prints_a_calls_records_with_the_redacted_traceback(url: str, tmp_path: Path) -> None:


    @toolproof.tool(effect="read")
    def get_quote(item: str, api_token: Annotated[str, toolproof.Secret]) -> int:
        """Get the price of one item.

        Args:
            item: The item.
            api_token: The pricing token.
        """
        return {"apple": 3}[item] if item == "apple" else int(f"price of {item} via {api_token}")

    runner = toolproof.Runner(toolproof.Toolset([get_quote]), store=url)
    failed, fine = (runner.call_sync("get_quote", {"item": i, "api_token": SECRET}) for i in ("pear", "apple"))
    runner.close()
    assert fine.ok and failed.error is not None and "Traceback" not in failed.to_json()

    shown = toolproof_cli("audit", "show", failed.meta.call_id, "--json", "-s", url).stdout
    audit, stop = json_lines(shown)
    assert (audit["record"], stop["record"]) == ("audit", "stop") and stop["id"] == failed.meta.extra["stop_id"]
    for row in (audit, stop):
        assert row["call_id"] == failed.meta.call_id and row["exception_type"] == "ValueError"
        assert row["traceback"].startswith("Traceback") and "in get_quote" in row["traceback"]
    assert audit["at"].endswith("Z") and SECRET not in shown

    text = toolproof_cli("audit", "show", failed.meta.call_id, "-s", url).stdout
    assert "exception_type: ValueError" in text and "Traceback (most recent call last):" in text
    assert "invalid literal for int() with base 10: 'price of pear via [REDACTED]'" in text and SECRET not in text
    (ok,) = json_lines(toolproof_cli("audit", "show", fine.meta.call_id, "--json", "-s", url).stdout)
    assert ok["outcome"] == "ok" and ok["traceback"] is None

    missing = toolproof_cli("audit", "show", "no-such-call", "-s", url, code=1)
    assert "no audit or stop records for call 'no-such-call'" in missing.stderr
    nowhere = tmp_path / "nowhere" / "x.sqlite3"
    toolproof_cli("audit", "show", failed.meta.call_id, "-s", f"sqlite:///{nowhere}", code=2)
    assert not nowhere.parent.exists()
