"""`toolproof approvals` as a subprocess on a real SQLite store that a gated agent run filled."""

from __future__ import annotations

from pathlib import Path

import toolproof
from tests.approvals._tools import payments
from tests.cli._run import json_lines, toolproof_cli

SECRET = "tok-5ecret-0123456789"
CTX = toolproof.CallContext(conversation_id="c-9", principal="buyer-1")


def gate(url: str, paid: list[int], amount: int) -> toolproof.Envelope:
    with toolproof.Runner(payments(paid), store=url) as runner:
        return runner.call_sync("pay", {"amount_rs": amount, "to": "Agro", "api_token": SECRET}, context=CTX)


def test_list_show_approve_then_the_call_runs_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tp.sqlite3'}"
    paid: list[int] = []
    request_id = str(gate(url, paid, 20_000).meta.extra["approval_id"])
    listed = json_lines(toolproof_cli("approvals", "list", "--json", "--store", url).stdout)
    assert [(r["id"], r["status"], r["tool"]) for r in listed] == [(request_id, "pending", "pay")]
    assert listed[0]["expires_at"].endswith("Z") and SECRET not in str(listed)
    shown = toolproof_cli("approvals", "show", request_id, "--store", url).stdout
    assert "reason: amount 20000 Rs is above" in shown and SECRET not in shown
    approved = toolproof_cli("approvals", "approve", request_id, "--by", "alice", "--note", "ok", "--store", url)
    assert f"{request_id}: approved by alice" in approved.stdout
    twice = toolproof_cli("approvals", "deny", request_id, "--by", "bob", "--note", "no", "--store", url, code=1)
    assert "already approved by alice" in twice.stderr
    assert gate(url, paid, 20_000).ok and gate(url, paid, 20_000).meta.replayed
    assert paid == [20_000]
    assert json_lines(toolproof_cli("approvals", "list", "--json", "--store", url).stdout) == []
    done = json_lines(toolproof_cli("approvals", "list", "--status", "approved", "--json", "--store", url).stdout)
    assert [(r["decided_by"], r["note"]) for r in done] == [("alice", "ok")]


def test_deny_needs_a_note_and_the_agent_is_told(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tp.sqlite3'}"
    paid: list[int] = []
    request_id = str(gate(url, paid, 30_000).meta.extra["approval_id"])
    empty = toolproof_cli("approvals", "deny", request_id, "--note", " ", "--store", url, code=2)
    assert "--note must say why" in empty.stderr
    denied = json_lines(toolproof_cli("approvals", "deny", request_id, "--by", "bob", "--note", "not on the list",
                                      "--json", "--store", url).stdout)
    assert denied[0]["status"] == "denied" and denied[0]["decided_at"].endswith("Z")
    refused = gate(url, paid, 30_000)
    assert refused.error is not None and refused.error.code == "APPROVAL_DENIED"
    assert "not on the list" in refused.error.message and paid == []
    missing = toolproof_cli("approvals", "approve", "apr_missing", "--store", url, code=1)
    assert "no approval request 'apr_missing'" in missing.stderr
    bad = toolproof_cli("approvals", "list", "--status", "maybe", "--store", url, code=2)
    assert "--status must be one of" in bad.stderr
