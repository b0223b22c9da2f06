"""The gateway as operators run it, in real subprocesses: per-caller limits over HTTP with two bearer tokens,
`/metrics` scraped after a scripted session, `/healthz` and `/readyz`, SIGHUP reloads with an open session,
and `--metrics-port` on a stdio gateway. Upstream: tests/mcp_servers/bulky.py over stdio; clients: the
official SDK."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families

from tests.mcp_servers.harness import PY, REPO_ROOT, TIME_SERVER, child_env, terminate
from toolproof import Envelope

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
ALICE = "tok-alice-0123456789abcdef"
BOB = "tok-bob-0123456789abcdefgh"
CAROL = "tok-carol-0123456789abcdef"


def write_config(path: Path, *, limits: str = "", caps: str = "", upstream_extra: str = "", gateway_extra: str = "",
                 more: str = "") -> Path:
    env = child_env()
    path.write_text(f"""
[gateway]
name = "ops-desk"
{gateway_extra}

[upstreams.bulky]
command = {json.dumps([PY, "-m", "tests.mcp_servers.bulky"])}
cwd = {json.dumps(str(REPO_ROOT))}
env = {{ {", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())} }}
trusted = true
{upstream_extra}
{more}
{caps}
{limits}
""", encoding="utf-8")
    return path


def tokens(tmp_path: Path) -> Path:
    file = tmp_path / "tokens.txt"
    file.write_text(f"alice {ALICE}\nbob {BOB}\n", encoding="utf-8")
    return file


@dataclass
class Running:
    proc: asyncio.subprocess.Process
    url: str
    lines: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.url.rsplit("/mcp", 1)[0]

    async def wait_for(self, pattern: str, timeout_s: float = 30.0) -> str:
        async with asyncio.timeout(timeout_s):
            while True:
                for line in self.lines:
                    if re.search(pattern, line):
                        return line
                await asyncio.sleep(0.05)


@asynccontextmanager
async def gateway_http(config: Path, *extra: str) -> AsyncIterator[Running]:
    proc = await asyncio.create_subprocess_exec(
        PY, "-m", "toolproof", "gateway", "--config", str(config), "--http", "--host", "127.0.0.1", "--port", "0",
        *extra, cwd=REPO_ROOT, env={**os.environ, **child_env()},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    lines: list[str] = []

    async def read() -> None:
        assert proc.stderr is not None
        while line := await proc.stderr.readline():
            lines.append(line.decode(errors="replace"))

    reader = asyncio.create_task(read())
    try:
        async with asyncio.timeout(60):
            while not any("serving MCP on" in line for line in lines):
                if proc.returncode is not None or reader.done():
                    raise RuntimeError(f"gateway exited early: {''.join(lines)}")
                await asyncio.sleep(0.05)
        url = re.search(r"serving MCP on (\S+)", next(x for x in lines if "serving MCP on" in x)).group(1)  # type: ignore[union-attr]
        yield Running(proc, url, lines)
    finally:
        await terminate(proc)
        reader.cancel()


@asynccontextmanager
async def as_client(url: str, token: str) -> AsyncIterator[Client]:
    transport = streamable_http_client(url, http_client=create_mcp_http_client(
        headers={"authorization": f"Bearer {token}"}))
    async with Client(transport, read_timeout_seconds=60) as client:
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> Envelope:
    result = await client.call_tool(tool, args)
    return Envelope.from_dict(result.structured_content)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(scrape: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float | None:
    return scrape.get((name, frozenset(labels.items())))


LIMIT_ECHO = """
[[limits]]
name = "echo-per-caller"
tool = "echo"
rate = 2
period_s = 60
"""


async def test_a_caller_over_its_limit_is_refused_while_another_is_served_and_metrics_count_it(
        tmp_path: Path) -> None:
    config = write_config(tmp_path / "gw.toml", limits=LIMIT_ECHO,
                          caps="[caps]\nmax_response_bytes = 100000\nmax_response_chars = 50000\n")
    async with gateway_http(config, "--tokens-file", str(tokens(tmp_path))) as gw:
        async with as_client(gw.url, ALICE) as alice, as_client(gw.url, BOB) as bob:
            first = [await call(alice, "echo", {"text": f"a{i}"}) for i in range(2)]
            over = await call(alice, "echo", {"text": "a2"})
            served = await call(bob, "echo", {"text": "b0"})
            capped = await call(alice, "big", {"size": 5_000_000})  # other tool: not under the echo rule
        assert all(e.ok for e in first) and served.ok and served.result == "b0"
        assert over.error is not None and over.error.error_class.value == "rate_limited"
        assert over.error.code == "GATEWAY_RATE_LIMITED" and 25 < (over.error.retry_after_s or 0) <= 30
        assert "alice is over the gateway limit 'echo-per-caller' for echo" in over.error.message
        assert capped.ok and "this answer was cut" in capped.result

        async with httpx.AsyncClient(timeout=30) as http:
            health = await http.get(f"{gw.base}/healthz")
            ready = await http.get(f"{gw.base}/readyz")
            scraped = await http.get(f"{gw.base}/metrics")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        assert ready.status_code == 200 and ready.json()["upstreams"] == {"bulky": "ok"}
        assert ready.json()["store"] == "ok"
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
        m = samples(scraped.text)
        (tmp_path / "scrape.txt").write_text(scraped.text, encoding="utf-8")
    assert value(m, "toolproof_gateway_calls_total", upstream="bulky", tool="echo", outcome="ok") == 3
    assert value(m, "toolproof_gateway_calls_total", upstream="bulky", tool="echo", outcome="error") == 1
    assert value(m, "toolproof_gateway_calls_total", upstream="bulky", tool="big", outcome="ok") == 1
    assert value(m, "toolproof_gateway_errors_total", upstream="bulky", tool="echo", error_class="rate_limited",
                 error_code="GATEWAY_RATE_LIMITED") == 1
    assert value(m, "toolproof_gateway_call_duration_seconds_count", upstream="bulky", tool="echo") == 4
    assert value(m, "toolproof_gateway_responses_capped_total", upstream="bulky", tool="big") == 1
    assert value(m, "toolproof_gateway_breaker_state", upstream="bulky", state="closed") == 1
    assert value(m, "toolproof_gateway_breaker_state", upstream="bulky", state="open") == 0
    assert value(m, "toolproof_gateway_journal_unknown_outcomes") == 0
    assert value(m, "toolproof_gateway_approvals_pending") == 0
    assert value(m, "toolproof_gateway_limit_rules") == 1
    # No label carries an argument, a principal or an id.
    assert "alice" not in scraped.text and "a2" not in scraped.text and "b0" not in scraped.text


async def test_sighup_keeps_the_old_config_when_the_new_one_is_broken_and_applies_a_good_one_live(
        tmp_path: Path) -> None:
    strict = LIMIT_ECHO.replace("rate = 2", "rate = 1")
    config = write_config(tmp_path / "gw.toml", limits=strict)
    async with gateway_http(config, "--tokens-file", str(tokens(tmp_path))) as gw, as_client(gw.url, ALICE) as alice:
        assert (await call(alice, "echo", {"text": "1"})).ok
        assert (await call(alice, "echo", {"text": "2"})).error_class.value == "rate_limited"  # type: ignore[union-attr]

        config.write_text(config.read_text(encoding="utf-8") + "\n[[limits]]\nname = \"bad\"\nrate = -1\n",
                          encoding="utf-8")
        gw.proc.send_signal(signal.SIGHUP)
        line = await gw.wait_for(r"config reload refused")
        assert "the running config is kept" in line and "'bad': rate must be a positive number" in line
        still = await call(alice, "echo", {"text": "3"})  # the same session, the old limit
        assert still.error is not None and still.error.code == "GATEWAY_RATE_LIMITED"

        write_config(config, limits=strict, gateway_extra='store = "sqlite:///elsewhere.sqlite3"')
        gw.proc.send_signal(signal.SIGHUP)
        line = await gw.wait_for(r"config reload refused.*\[gateway\] store changed")
        assert "needs a restart" in line

        write_config(config, limits=LIMIT_ECHO.replace("rate = 2", "rate = 5"))
        gw.proc.send_signal(signal.SIGHUP)
        line = await gw.wait_for(r"config reloaded")
        assert "limits: 1 rule(s) -> 1 rule(s) (echo-per-caller)" in line
        after = [await call(alice, "echo", {"text": f"x{i}"}) for i in range(5)]  # same open session
        assert all(e.ok for e in after), [e.error for e in after]
        assert (await call(alice, "echo", {"text": "x5"})).error is not None

        # Rotate the bearer tokens: bob's goes, carol's comes; alice's open session carries on.
        (tmp_path / "tokens.txt").write_text(f"alice {ALICE}\ncarol {CAROL}\n", encoding="utf-8")
        gw.proc.send_signal(signal.SIGHUP)
        line = await gw.wait_for(r"config reloaded: .*tokens: 2 from")
        async with as_client(gw.url, CAROL) as carol:
            assert (await call(carol, "echo", {"text": "c"})).ok
        async with httpx.AsyncClient(timeout=30) as http:
            gone = await http.post(gw.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                   headers={"authorization": f"Bearer {BOB}",
                                            "accept": "application/json, text/event-stream"})
            m = samples((await http.get(f"{gw.base}/metrics")).text)
        assert gone.status_code == 401
        assert (await call(alice, "echo", {"text": "still"})).error is not None  # same session, still limited
    assert value(m, "toolproof_gateway_config_reloads_total", result="rejected") == 2
    assert value(m, "toolproof_gateway_config_reloads_total", result="applied") == 2
    assert value(m, "toolproof_gateway_config_last_reload_successful") == 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_stdio_gateway_serves_metrics_on_its_own_port(tmp_path: Path) -> None:
    config = write_config(tmp_path / "gw.toml")
    port = free_port()
    params = StdioServerParameters(command=PY, args=["-m", "toolproof", "gateway", "--config", str(config),
                                                     "--metrics-port", str(port)],
                                   env=child_env(), cwd=str(REPO_ROOT))
    async with Client(params, read_timeout_seconds=60) as client:
        for i in range(3):
            assert (await call(client, "echo", {"text": str(i)})).ok
        async with httpx.AsyncClient(timeout=30) as http:
            m = samples((await http.get(f"http://127.0.0.1:{port}/metrics")).text)
            ready = await http.get(f"http://127.0.0.1:{port}/readyz")
    assert value(m, "toolproof_gateway_calls_total", upstream="bulky", tool="echo", outcome="ok") == 3
    assert ready.status_code == 200


def run_check(config: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPROOF_")}
    env["PYTHONPATH"] = child_env()["PYTHONPATH"]
    return subprocess.run([PY, "-m", "toolproof", "gateway", "--config", str(config), "--check"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=90)


def test_check_validates_caps_and_limits(tmp_path: Path) -> None:
    bad = write_config(tmp_path / "bad.toml", limits='[[limits]]\nname = "x"\nrate = 1\nper = ["ip"]\n')
    refused = run_check(bad, tmp_path)
    assert refused.returncode == 2 and "[[limits]] 'x': per must be a list of distinct caller, tool, upstream" in (
        refused.stderr)
    good = write_config(tmp_path / "good.toml", caps="[caps]\nmax_response_chars = 50000\n",
                        limits=LIMIT_ECHO + '\n[[limits]]\nname = "typo"\ntool = "ecoh"\nrate = 1\n')
    checked = run_check(good, tmp_path)
    assert checked.returncode == 0, checked.stderr
    out = " ".join(checked.stdout.split())
    assert "caps: response 2,000,000 bytes / 50,000 chars, request 1,000,000 bytes" in out
    assert "limit echo-per-caller: caller *, tool echo, upstream *: 2 calls per 60 s, burst 2, per caller" in out
    assert "[[limits]] 'typo' picks none of the served tools; it limits nothing" in checked.stderr


async def test_watch_reloads_when_the_file_changes(tmp_path: Path) -> None:
    config = write_config(tmp_path / "gw.toml", limits=LIMIT_ECHO.replace("rate = 2", "rate = 1"))
    # Loopback without tokens: the client's bearer header is ignored.
    async with gateway_http(config, "--watch") as gw, as_client(gw.url, ALICE) as client:
        assert (await call(client, "echo", {"text": "1"})).ok
        assert (await call(client, "echo", {"text": "2"})).error is not None
        write_config(config, limits=LIMIT_ECHO.replace("rate = 2", "rate = 3"))
        line = await gw.wait_for(r"config reloaded")
        assert "limits: 1 rule(s) -> 1 rule(s)" in line
        assert (await call(client, "echo", {"text": "3"})).ok  # the same session, the new limit


TIME_UPSTREAM = f"""
[upstreams.time]
command = {json.dumps(list(TIME_SERVER))}
trusted = true
"""


async def test_a_reload_adds_and_removes_upstreams_with_the_session_open(tmp_path: Path) -> None:
    config = write_config(tmp_path / "gw.toml")
    async with gateway_http(config) as gw, as_client(gw.url, ALICE) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"big", "big_structured", "echo"}

        write_config(config, more=TIME_UPSTREAM.replace("mcp_server_time", "no_such_module_here"))
        gw.proc.send_signal(signal.SIGHUP)
        line = await gw.wait_for(r"config reload refused")
        assert "upstream 'time' could not be started" in line
        assert {t.name for t in (await client.list_tools()).tools} == {"big", "big_structured", "echo"}

        write_config(config, more=TIME_UPSTREAM)
        gw.proc.send_signal(signal.SIGHUP)
        line = await gw.wait_for(r"config reloaded: upstreams: bulky, time \(1 started, 0 retired\)")
        assert "added: convert_time, get_current_time;" in line
        assert "get_current_time" in {t.name for t in (await client.list_tools()).tools}
        now = await call(client, "get_current_time", {"timezone": "UTC"})
        assert now.ok and now.result["timezone"] == "UTC"
        assert (await call(client, "echo", {"text": "still here"})).result == "still here"

        write_config(config)
        gw.proc.send_signal(signal.SIGHUP)
        line = await gw.wait_for(r"config reloaded: upstreams: bulky \(0 started, 1 retired\)")
        assert "removed: convert_time, get_current_time)" in line
        assert "get_current_time" not in {t.name for t in (await client.list_tools()).tools}
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("get_current_time", {"timezone": "UTC"})
        assert (await call(client, "echo", {"text": "and here"})).ok
