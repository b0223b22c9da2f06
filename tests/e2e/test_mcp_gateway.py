"""`toolproof gateway` in a real subprocess, in front of the reference `mcp-server-time` and of a server that
misbehaves on purpose, driven by the official SDK client over stdio and streamable HTTP."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

from tests.mcp_servers.harness import (
    PY,
    REPO_ROOT,
    TIME_SERVER,
    child_env,
    dispatches,
    http_server,
    misbehaving_command,
    toolproof_stdio,
)
from toolproof import Envelope

pytestmark = pytest.mark.timeout(120)
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def write_config(tmp_path: Path, log: Path, extra: str = "") -> Path:
    file = tmp_path / "gateway.toml"
    env = {**child_env(), "MISBEHAVE_LOG": str(log)}
    file.write_text(
        f"""
[gateway]
name = "desk"

[upstreams.time]
command = {json.dumps(list(TIME_SERVER))}
trusted = true

[upstreams.odd]
command = {json.dumps(list(misbehaving_command("odd")))}
cwd = {json.dumps(str(REPO_ROOT))}
env = {{ {", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())} }}
timeout_s = 10
{extra}
""",
        encoding="utf-8",
    )
    return file


@asynccontextmanager
async def gateway(transport: str, config: Path) -> AsyncIterator[Client]:
    args = ("gateway", "--config", str(config))
    if transport == "stdio":
        async with Client(toolproof_stdio(*args), read_timeout_seconds=60) as client:
            yield client
    else:
        async with http_server(*args, timeout_s=60) as url, Client(url, read_timeout_seconds=60) as client:
            yield client


def envelope(result: object) -> Envelope:
    return Envelope.from_dict(result.structured_content)  # type: ignore[attr-defined]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_gateway_guards_a_reference_server_and_a_misbehaving_one(transport: str, tmp_path: Path) -> None:
    log = tmp_path / "odd.jsonl"
    async with gateway(transport, write_config(tmp_path, log)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        # The same tool name on two upstreams: both stay reachable, prefixed; the rest keep their names.
        assert {"time__get_current_time", "odd__get_current_time", "convert_time", "echo", "dotted_name"} <= set(listed)
        assert all(NAME.match(n) for n in listed)
        # Trusted upstream: its readOnlyHint holds. Untrusted: every tool is shown as a non-idempotent write.
        time_ann = listed["time__get_current_time"].annotations
        assert time_ann is not None and time_ann.read_only_hint is True
        echo_ann = listed["echo"].annotations
        assert echo_ann is not None and (echo_ann.read_only_hint, echo_ann.idempotent_hint) == (False, False)

        now = await client.call_tool("time__get_current_time", {"timezone": "Europe/Paris"})
        assert not now.is_error and envelope(now).result["timezone"] == "Europe/Paris"
        odd = await client.call_tool("odd__get_current_time", {"timezone": "Europe/Paris"})
        assert envelope(odd).result == {"time": "never", "server": "odd"}

        wrong_zone = await client.call_tool("time__get_current_time", {"timezone": "Mars/Olympus"})
        assert wrong_zone.is_error
        err = envelope(wrong_zone).error
        assert err is not None and err.error_class.value == "invalid_argument" and "Mars/Olympus" in err.message

        # Bad arguments never reach the upstream.
        for name, args in [("echo", {"text": "x", "extra": 1}), ("echo", {"text": 5}),
                           ("odd__get_current_time", {}), ("flaky_write", {"item": ["deep"] * 1000})]:
            bad = await client.call_tool(name, args)
            assert bad.is_error and envelope(bad).error.error_class.value == "invalid_argument"  # type: ignore[union-attr]

        # An untrusted idempotentHint on a failing write: one dispatch, no retry, the outcome is unknown.
        flaky = await client.call_tool("flaky_write", {"item": "crate"})
        flaky_env = envelope(flaky)
        assert flaky_env.error is not None and flaky_env.error.error_class.value == "outcome_unknown"

        limited = await client.call_tool("limited", {})
        assert envelope(limited).error.retry_after_s == 7  # type: ignore[union-attr]

        crashed = await client.call_tool("crash", {})
        assert envelope(crashed).error.error_class.value == "outcome_unknown"  # type: ignore[union-attr]
        back = await client.call_tool("echo", {"text": "after the crash"})
        assert envelope(back).result == "odd: after the crash"

        with pytest.raises(MCPError) as unknown:
            await client.call_tool("get_current_time", {"timezone": "UTC"})
        assert unknown.value.code == -32602

    calls = dispatches(log)
    assert [c["tool"] for c in calls] == ["get_current_time", "flaky_write", "limited", "crash", "echo"]
    assert all("extra" not in c["arguments"] for c in calls)


async def test_quick_form_with_prefix_always(tmp_path: Path) -> None:
    args = ("gateway", "--upstream", f"clock={' '.join(TIME_SERVER)}", "--trust", "clock", "--prefix", "always")
    async with Client(toolproof_stdio(*args), read_timeout_seconds=60) as client:
        names = sorted(t.name for t in (await client.list_tools()).tools)
        assert names == ["clock__convert_time", "clock__get_current_time"]
        converted = await client.call_tool(
            "clock__convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
        assert envelope(converted).result["target"]["timezone"] == "Asia/Tokyo"


def test_a_clash_that_remains_stops_the_gateway_at_start_with_a_clear_message(tmp_path: Path) -> None:
    config = write_config(tmp_path, tmp_path / "log", extra='[upstreams.odd.tools.echo]\nrename = "get_current_time"\n')
    done = subprocess.run(
        [PY, "-m", "toolproof", "gateway", "--config", str(config)],
        cwd=REPO_ROOT, env={**child_env(), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    text = " ".join(done.stderr.split())
    assert "tool name clash" in text and "odd/get_current_time" in text and "odd/echo" in text


def test_a_bad_config_fails_before_anything_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[upstreams.x]\ncommand = 'true'\ntrusted = 'yes'\n", encoding="utf-8")
    done = subprocess.run(
        [PY, "-m", "toolproof", "gateway", "--config", str(bad)],
        cwd=REPO_ROOT, env={**child_env(), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "trusted must be true or false" in " ".join(done.stderr.split())


@pytest.mark.parametrize("command", [["serve", "toolproof.examples.wholesaler:toolset"],
                                     ["gateway", "--upstream", "t=true"]])
def test_an_unsupported_store_url_is_a_clear_error(command: list[str]) -> None:
    done = subprocess.run(
        [PY, "-m", "toolproof", *command, "--store", "bogus://x"],
        cwd=REPO_ROOT, env={**child_env(), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "bogus://x" in done.stderr and "Traceback" not in done.stderr


async def test_a_gateway_in_front_of_a_toolproof_http_server_keeps_envelopes_and_forwards_ids() -> None:
    from toolproof.mcp import META_CONVERSATION_ID, META_PRINCIPAL

    async with http_server("serve", "toolproof.examples.wholesaler:toolset") as url:
        # Trusted: its envelopes are kept (an untrusted upstream's are quoted as data, test_mcp_untrusted.py).
        args = ("gateway", "--upstream", f"shop={url}", "--trust", "shop", "--prefix", "always")
        async with Client(toolproof_stdio(*args), read_timeout_seconds=60) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "shop__place_order" in names and "shop__get_today_price" in names
            enum = await client.call_tool("shop__get_today_price", {"crop": "mango"})
            err = envelope(enum).error
            assert err is not None and err.field == "crop" and "onion" in (err.allowed_values or [])
            order = {"crop": "groundnut", "quantity_kg": 40, "delivery_date": "2031-02-01"}
            meta = {META_CONVERSATION_ID: "conv-9", META_PRINCIPAL: "B-17"}
            placed = await client.call_tool("shop__place_order", order, meta=meta)  # type: ignore[arg-type]
            assert envelope(placed).result["note"] == "New order placed"
            # The upstream's own NotFound survives two hops with its code and field.
            missing = await client.call_tool("shop__get_order_status", {"order_id": 4242}, meta=meta)  # type: ignore[arg-type]
            lost = envelope(missing).error
            assert lost is not None and (lost.code, lost.field) == ("ORDER_NOT_FOUND", "order_id")
