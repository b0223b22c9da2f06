"""Chaos on MCP servers over stdio, through the official client SDK: a server without toolproof takes effect
twice on every resend it can be given from outside; the same tools served by `toolproof serve` once; without
a count tool the effects are not observable, what the caller was told still is."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolproof.chaos import scenario
from toolproof.chaos._servers import ServerError, run_server_chaos

PLAIN = f"{sys.executable} -m tests.mcp_servers.orders"
SERVED = f"{sys.executable} -m toolproof serve tests.chaos._targets:served_tools"
STAGED = ["reply_lost", "worker_killed", "racing_resends", "changed_arguments", "new_request_id"]


@pytest.fixture(autouse=True)
def server_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORDERS_DB", str(tmp_path / "plain-orders.sqlite3"))
    monkeypatch.setenv("TOOLPROOF_STORE", f"sqlite:///{tmp_path / 'served.sqlite3'}")
    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root / "src"), str(root)]))


def test_a_server_without_toolproof_takes_effect_twice_on_every_resend() -> None:
    rows = run_server_chaos(PLAIN, count_with="count_orders")
    assert {r.tool for r in rows} == {"place_order"}  # count_orders is read-only
    got = {r.scenario: r.effects for r in rows}
    assert got == {"reply_lost": 2, "worker_killed": 2, "racing_resends": 2, "changed_arguments": 2,
                   "new_request_id": 2, "timeout_after_commit": None, "rate_limited": None, "ok_did_nothing": None}
    killed = next(r for r in rows if r.scenario == "worker_killed")
    assert killed.told[0].startswith("nothing (server ") and "killed with SIGKILL" in killed.told[0]
    assert next(r for r in rows if r.scenario == "rate_limited").note.startswith("not staged on a server")
    assert all(r.counted.startswith("read tool count_orders") for r in rows if r.effects is not None)


def test_without_a_count_tool_the_effects_are_not_observable_but_the_replies_are() -> None:
    rows = run_server_chaos(PLAIN, scenarios=[scenario("reply_lost")])
    assert [(r.effects, r.counted, r.told) for r in rows] == [
        (None, "not observable (no --count-with TOOL)", ("nothing (reply dropped; it was ok)", "ok"))]


def test_the_same_kind_of_tool_served_by_toolproof_takes_effect_once() -> None:
    rows = run_server_chaos(SERVED, tools=["place_order"], count_with="count_orders",
                            scenarios=[scenario(k) for k in ("reply_lost", "worker_killed", "racing_resends")])
    assert [(r.scenario, r.effects) for r in rows] == [("reply_lost", 1), ("worker_killed", 1), ("racing_resends", 1)]
    assert rows[0].told[-1] == "ok (replayed)" and rows[1].told[-1] == "ok (replayed)"  # the journal is a file


def test_a_server_that_does_not_start_or_lacks_the_count_tool_is_one_error() -> None:
    with pytest.raises(ServerError, match="the server has no tool 'tally'; it has: place_order, count_orders"):
        run_server_chaos(PLAIN, count_with="tally")
    with pytest.raises(ServerError, match=r"^MCP server '.*no_such_module_here'"):
        run_server_chaos(f"{sys.executable} -m no_such_module_here")


def test_a_server_at_a_url_gets_the_same_resends_but_is_not_killed(tmp_path: Path) -> None:
    served = subprocess.Popen(
        [sys.executable, "-m", "toolproof", "serve", "tests.chaos._targets:served_tools", "--http", "--host",
         "127.0.0.1", "--port", "0"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    try:
        assert served.stderr is not None
        url = None
        while url is None:
            line = served.stderr.readline()
            assert line, "the server ended before it said where it serves"
            found = re.search(r"serving MCP on (\S+)", line)
            url = found.group(1) if found else None
        rows = run_server_chaos(url, tools=["place_order"], count_with="count_orders",
                                scenarios=[scenario("new_request_id"), scenario("worker_killed")])
    finally:
        served.terminate()
        served.wait(timeout=30)
    fresh, killed = rows
    assert (fresh.effects, fresh.told[-1], fresh.note) == (1, "ok (replayed)", "re-issued on a new session")
    assert (killed.effects, killed.counted) == (None, "not applicable")
    assert killed.note == "a server at a URL is not this run's process to kill"
