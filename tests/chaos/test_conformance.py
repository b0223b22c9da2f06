"""The conformance check on real MCP servers over stdio, through the official client SDK: a server without
toolproof runs every repeat twice and announces nothing; `toolproof serve` runs each once and honours the
identity extension it announces; a server that announces the extension but keeps one order per arguments
fails the identity checks (another conversation's, another principal's order is never placed)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from toolproof.chaos._conformance import CHECKS, run_conformance

PLAIN = f"{sys.executable} -m tests.mcp_servers.orders"
CARELESS = f"{sys.executable} -m tests.mcp_servers.careless_orders"
SERVED = f"{sys.executable} -m toolproof serve tests.chaos._targets:served_tools"


@pytest.fixture(autouse=True)
def server_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORDERS_DB", str(tmp_path / "plain-orders.sqlite3"))
    monkeypatch.setenv("TOOLPROOF_STORE", f"sqlite:///{tmp_path / 'served.sqlite3'}")
    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root / "src"), str(root)]))


def test_a_server_without_toolproof_runs_every_repeat_twice_and_announces_no_identity() -> None:
    checks = run_conformance(PLAIN, count_with="count_orders")
    assert [c.check for c in checks] == [key for key, _ in CHECKS]
    assert {c.check: (c.verdict, c.effects) for c in checks} == {
        "resend": ("fail", 2), "cut_stream": ("fail", 2), "session_per_call": ("fail", 2),
        "identity_conversation": ("not announced", None), "identity_principal": ("not announced", None)}
    assert checks[0].evidence == "ran 2 time(s) (--count-with count_orders)"
    assert checks[1].told[0].startswith("nothing (stream cut after 0.05 s")


def test_toolproof_serve_runs_each_repeat_once_and_honours_the_extension_it_announces() -> None:
    checks = run_conformance(SERVED, tools=["place_order"], count_with="count_orders")
    assert {c.check: (c.verdict, c.effects) for c in checks} == {
        "resend": ("pass", 1), "cut_stream": ("pass", 1), "session_per_call": ("pass", 1),
        "identity_conversation": ("pass", 2), "identity_principal": ("pass", 2)}
    assert checks[0].told == ("ok", "ok (replayed)") and checks[2].told == ("ok", "ok (replayed)")


def test_without_a_count_tool_a_replay_passes_and_a_plain_ok_is_not_observable() -> None:
    served = {c.check: c for c in run_conformance(SERVED, tools=["place_order"])}
    assert (served["resend"].verdict, served["resend"].effects) == ("pass", None)
    assert served["resend"].evidence == "the repeat was answered as a replay (not counted: no --count-with)"
    plain = {c.check: c.verdict for c in run_conformance(PLAIN)}
    assert plain["resend"] == plain["session_per_call"] == "not observable"


def test_a_server_that_announces_the_extension_but_ignores_who_asks_fails_the_identity_checks() -> None:
    checks = {c.check: c for c in run_conformance(CARELESS, count_with="count_orders")}
    assert (checks["resend"].verdict, checks["resend"].effects) == ("pass", 1)
    for key, whose in (("identity_conversation", "conversation"), ("identity_principal", "principal")):
        assert checks[key].verdict == "fail"
        assert checks[key].evidence.startswith(f"the other {whose} was told ok, but its call did not run")
