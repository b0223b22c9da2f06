"""The gateway is honest about stale reads: in front of the reference `mcp-server-time` (untrusted, so every tool is
a journaled write) it says so at start and with `--check`, and a replayed answer says when it was first given.
Driven by the official MCP client over stdio, and as a plain subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest
from mcp.client.client import Client

from tests.mcp_servers.harness import PY, REPO_ROOT, TIME_SERVER, child_env, toolproof_stdio
from toolproof import Envelope
from toolproof.integrations.meta import mcp_meta

pytestmark = pytest.mark.timeout(120)
UPSTREAM = "time=" + shlex.join(TIME_SERVER)


def toolproof(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPROOF_")}
    env["PYTHONPATH"] = child_env()["PYTHONPATH"]
    return subprocess.run([PY, "-m", "toolproof", *args], input=stdin, capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=90)


def envelope(result: object) -> Envelope:
    return Envelope.from_dict(result.structured_content)  # type: ignore[attr-defined]


async def test_a_replayed_read_says_which_call_ran_and_when() -> None:
    async with Client(toolproof_stdio("gateway", "--upstream", UPSTREAM), read_timeout_seconds=60) as client:
        before = time.time()
        # One conversation (an agent's): the untrusted "read" is journaled, so its repeat there is replayed.
        meta = mcp_meta("stale-reads")
        first = envelope(await client.call_tool("get_current_time", {"timezone": "UTC"}, meta=meta))  # type: ignore[arg-type]
        await asyncio.sleep(2)
        second = envelope(await client.call_tool("get_current_time", {"timezone": "UTC"}, meta=meta))  # type: ignore[arg-type]
    assert first.ok and not first.meta.replayed and "replayed_from" not in first.meta.to_dict()
    # Still the stored answer (an untrusted tool is journaled), but it now says so, with the original call and time.
    assert second.meta.replayed and second.result == first.result
    origin = second.meta.to_dict()["replayed_from"]
    assert origin["call_id"] == first.meta.call_id != second.meta.call_id
    assert origin["at"].endswith("Z")
    ran = datetime.fromisoformat(origin["at"]).timestamp()
    assert before - 1 <= ran <= before + 1.9  # when the first call ran, not when the replay was served


def test_check_prints_every_upstream_tool_and_serves_nothing(tmp_path: Path) -> None:
    checked = toolproof("gateway", "--upstream", UPSTREAM, "--check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    rows = [line for line in checked.stdout.splitlines() if "get_current_time" in line or "convert_time" in line]
    assert len(rows) == 3  # two table rows and the note
    assert all("write, not idempotent" in r and "untrusted" in r for r in rows[:2])
    assert "replays the first answer" in checked.stdout and "--trust time" in checked.stdout
    assert not (tmp_path / ".toolproof").exists()  # no store opened, nothing written

    trusted = toolproof("gateway", "--upstream", UPSTREAM, "--trust", "time", "--check", "--json", cwd=tmp_path)
    lines = [json.loads(line) for line in trusted.stdout.splitlines()]
    assert {row["tool"] for row in lines} == {"get_current_time", "convert_time"}
    assert all((r["trusted"], r["effect"], r["journaled"], r["retried"]) == (True, "read", False, True) for r in lines)


def test_the_table_is_printed_at_start_on_stderr() -> None:
    # stdin at EOF: the stdio server starts, prints, sees its client gone and stops; stdout stays protocol-only.
    started = toolproof("gateway", "--upstream", UPSTREAM, "-s", "memory://", cwd=REPO_ROOT)
    assert started.returncode == 0, started.stderr
    assert started.stdout == ""
    assert "get_current_time" in started.stderr and "journaled" in started.stderr
    assert "replays the first answer" in started.stderr
