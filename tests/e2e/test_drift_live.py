"""Drift re-checked while running: a real upstream MCP server (tests/mcp_servers/drifting.py, a subprocess)
changes a tool definition mid-session, and the running gateway (or an imported toolset) notices without a
restart: before a call once the last listing is older than `drift_recheck_s`, when the upstream announces the
change, and when the upstream refuses a call as invalid. `toolproof gateway pins approve` from another process
lets the next call through; a compatible change passes under `accept-compatible` and clients are told to
list again. The upstream counts its `tools/list` requests, so the interval is checked from its side."""

from __future__ import annotations

import asyncio
import copy
import json
import time
import uuid
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.client import Client

from tests.cli._run import json_lines, toolproof_cli
from tests.e2e.test_drift import INJECTED, V1
from tests.mcp_servers.harness import PY, REPO_ROOT, child_env, toolproof_stdio
from toolproof import Runner, open_store
from toolproof.mcp import Gateway, GatewayConfig, Upstream, import_tools

pytestmark = [pytest.mark.timeout(120), pytest.mark.e2e]


class Upstage:
    """The drifting upstream's files: its tool definitions (rewritten mid-session), dispatches and listings."""

    def __init__(self, tmp_path: Path, tools: list[dict[str, Any]]) -> None:
        self.tools, self.calls, self.lists = tmp_path / "tools.json", tmp_path / "calls.jsonl", tmp_path / "lists.jsonl"
        self.write(tools)

    def write(self, tools: list[dict[str, Any]]) -> None:
        tmp = self.tools.with_suffix(".tmp")
        tmp.write_text(json.dumps(tools), encoding="utf-8")
        tmp.replace(self.tools)  # atomic: the server never reads half a file

    def upstream(self, *, drift: str = "accept-compatible", recheck_s: float = 5.0, notify: bool = False) -> Upstream:
        command = (PY, "-m", "tests.mcp_servers.drifting", str(self.tools), str(self.calls), "--lists", str(self.lists),
                   *(("--notify",) if notify else ()))
        return Upstream(name="billing", command=command, env=child_env(), cwd=str(REPO_ROOT), drift=drift,
                        drift_recheck_s=recheck_s)

    def dispatched(self) -> int:
        return len(self.calls.read_text(encoding="utf-8").splitlines()) if self.calls.exists() else 0

    def listed(self) -> int:
        return len(self.lists.read_text(encoding="utf-8").splitlines()) if self.lists.exists() else 0


def poisoned() -> list[dict[str, Any]]:
    tools = copy.deepcopy(V1)
    tools[0]["description"] += INJECTED
    return tools


def wider() -> list[dict[str, Any]]:
    tools = copy.deepcopy(V1)
    tools[0]["inputSchema"]["properties"]["year"] = {"type": "integer"}
    return tools


def args(**extra: Any) -> dict[str, Any]:
    """Fresh arguments (untrusted upstream tools are writes: the journal would replay a repeat)."""
    return {"number": f"INV-{uuid.uuid4().hex[:8]}", **extra}


def pending(url: str) -> bool:
    store = open_store(url)
    try:
        return any(p.pending is not None for p in store.pin_list())
    finally:
        store.close()


async def eventually(check: Any, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_an_injection_mid_session_is_blocked_on_the_next_call_and_an_approval_lets_the_next_through(
    tmp_path: Path,
) -> None:
    up = Upstage(tmp_path, V1)
    url = f"sqlite:///{tmp_path / 'gw.sqlite3'}"
    async with Gateway(GatewayConfig(upstreams=(up.upstream(drift="block", recheck_s=0.3),)), store=url) as gw:
        assert [d.action for d in gw.drifts] == ["pinned"]
        assert (await gw.runner.call("lookup_invoice", args())).ok and up.dispatched() == 1

        up.write(poisoned())  # the upstream changes while the gateway runs; nobody restarts anything
        await asyncio.sleep(0.4)  # past the interval: the next call re-lists first
        env = await gw.runner.call("lookup_invoice", args())
        assert not env.ok and env.error is not None
        assert env.error.code == "TOOL_DEFINITION_CHANGED" and env.error.next_action.value == "escalate"
        assert "description-changed" in (env.error.hint or "")
        assert env.meta.extra.get("stop_id")
        assert up.dispatched() == 1  # nothing reached the upstream
        assert "IMPORTANT" not in gw.toolset.get("lookup_invoice").description  # the model keeps the pinned text
        (watch,) = gw.watches
        drift = watch.drift("lookup_invoice")
        assert drift is not None and drift.action == "blocked"

        gw.runner.flush()
        pins = json_lines(toolproof_cli("gateway", "pins", "list", "--json", "-s", url).stdout)
        assert [(p["tool"], p["status"]) for p in pins] == [("lookup_invoice", "pending")]
        toolproof_cli("gateway", "pins", "approve", "billing", "lookup_invoice", "--note", "reviewed: vendor text",
                      "-s", url)  # another process, the same store
        env = await gw.runner.call("lookup_invoice", args())  # at once: a blocked tool re-reads its pin per call
        assert env.ok, env.error
        assert up.dispatched() == 2
        assert "IMPORTANT" in gw.toolset.get("lookup_invoice").description  # approved: served as it is now
    store = open_store(url)
    stops = store.list_stops()
    store.close()
    assert [(s.tool, s.code, s.effect_status) for s in stops] == [
        ("lookup_invoice", "TOOL_DEFINITION_CHANGED", "not_done")]


async def test_a_compatible_change_announced_by_the_upstream_passes_and_clients_are_told(tmp_path: Path) -> None:
    """The interval is an hour: only the upstream's own announcement can make the gateway look again."""
    up = Upstage(tmp_path, V1)
    url = f"sqlite:///{tmp_path / 'gw.sqlite3'}"
    config = GatewayConfig(upstreams=(up.upstream(recheck_s=3600, notify=True),))
    async with Gateway(config, store=url) as gw, Client(gw.create_server(), cache=None) as client:
        before = await client.list_tools()
        assert "year" not in json.dumps(before.tools[0].input_schema)
        async with client.listen(tools_list_changed=True) as events:
            up.write(wider())
            async with asyncio.timeout(15):
                await anext(aiter(events))  # the gateway re-checked, accepted, and told this client
        after = await client.list_tools()
        assert "year" in after.tools[0].input_schema["properties"]
        result = await client.call_tool("lookup_invoice", args(year=2026))  # valid only under the new schema
        assert not result.is_error, result.structured_content
        (watch,) = gw.watches
        drift = watch.drift("lookup_invoice")
        assert drift is not None and drift.action == "accepted"
        assert watch.listings == 1
    pins = json_lines(toolproof_cli("gateway", "pins", "list", "--json", "-s", url).stdout)
    assert [p["status"] for p in pins] == ["pinned"]


async def test_an_upstream_that_refuses_a_call_as_invalid_is_re_checked_and_a_breaking_change_blocked(
    tmp_path: Path,
) -> None:
    """No interval and no announcement: the upstream gained a required field and refused the call (-32602)."""
    up = Upstage(tmp_path, V1)
    url = f"sqlite:///{tmp_path / 'gw.sqlite3'}"
    async with Gateway(GatewayConfig(upstreams=(up.upstream(recheck_s=3600),)), store=url) as gw:
        assert (await gw.runner.call("lookup_invoice", args())).ok
        breaking = copy.deepcopy(V1)
        breaking[0]["inputSchema"]["properties"]["currency"] = {"type": "string"}
        breaking[0]["inputSchema"]["required"] = ["number", "currency"]
        up.write(breaking)
        env = await gw.runner.call("lookup_invoice", args())
        assert env.error is not None and env.error.code == "TOOL_DEFINITION_CHANGED", env.error
        assert "breaking" in (env.error.hint or "")
        env = await gw.runner.call("lookup_invoice", args())  # and from now on, before anything is sent
        assert env.error is not None and env.error.code == "TOOL_DEFINITION_CHANGED"
        assert up.dispatched() == 1


async def test_the_recheck_interval_bounds_the_upstream_listings(tmp_path: Path) -> None:
    """Calls and client listings as fast as they go for a while: the upstream is listed at most once per
    interval (plus the listing at start), counted by the upstream itself."""
    up = Upstage(tmp_path, V1)
    interval = 0.5
    config = GatewayConfig(upstreams=(up.upstream(recheck_s=interval),))
    async with Gateway(config, store="memory://") as gw, Client(gw.create_server(), cache=None) as client:
        assert up.listed() == 1
        calls = lists = 0
        started = time.monotonic()
        while time.monotonic() - started < 2.0:
            assert not (await client.call_tool("lookup_invoice", args())).is_error
            await client.list_tools()
            calls, lists = calls + 1, lists + 1
        elapsed = time.monotonic() - started
        relisted = up.listed() - 1
        (watch,) = gw.watches
    assert calls >= 5 and lists >= 5
    assert relisted == watch.listings
    assert 1 <= relisted <= elapsed / interval + 1, (relisted, elapsed, calls)


async def test_import_tools_rechecks_before_calls_and_replaces_the_tool_in_place(tmp_path: Path) -> None:
    up = Upstage(tmp_path, V1)
    store = open_store(f"sqlite:///{tmp_path / 'pins.sqlite3'}")
    async with await import_tools(up.upstream(), pins=store, drift="block", drift_recheck_s=0.3) as tools:
        runner = Runner(tools)
        assert (await runner.call("lookup_invoice", args())).ok
        up.write(poisoned())
        await asyncio.sleep(0.4)
        env = await runner.call("lookup_invoice", args())
        assert env.error is not None and env.error.code == "TOOL_DEFINITION_CHANGED"
        assert "IMPORTANT" not in tools.get("lookup_invoice").description
        up.write(wider())  # now a compatible change only, against the pin: still held under `block`
        await asyncio.sleep(0.4)
        assert (await runner.call("lookup_invoice", args())).error is not None
        assert "year" not in tools.get("lookup_invoice").input_schema["properties"]
        pin = store.pin_list()[0]
        assert pin.pending is not None and "year" in json.dumps(pin.pending)
        store.pin_put(type(pin)(pin.upstream, pin.tool, pin.pending_fingerprint or "", pin.pending, time.time(),
                                note="approved in a test"))
        assert (await runner.call("lookup_invoice", args())).ok  # the guard re-read the pin: approved
        assert "year" in tools.get("lookup_invoice").input_schema["properties"]  # the toolset itself follows
        assert (await runner.call("lookup_invoice", args(year=2026))).ok
        runner.close()
    assert up.dispatched() >= 2
    store.close()


async def test_a_handshake_era_client_gets_notifications_tools_list_changed(tmp_path: Path) -> None:
    up = Upstage(tmp_path, V1)
    config = GatewayConfig(upstreams=(up.upstream(recheck_s=3600, notify=True),))
    told = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            told.set()

    async with Gateway(config, store="memory://") as gw, Client(gw.create_server(), cache=None, mode="legacy",
                                                                  message_handler=on_message) as client:
        await client.list_tools()  # the gateway learns of this client from its requests
        up.write(wider())
        async with asyncio.timeout(15):
            await told.wait()
        assert "year" in (await client.list_tools()).tools[0].input_schema["properties"]


async def test_a_listing_that_fails_fails_the_call_closed(tmp_path: Path) -> None:
    """An upstream whose `tools/list` breaks cannot be checked, so nothing is sent to it."""
    up = Upstage(tmp_path, V1)
    async with Gateway(GatewayConfig(upstreams=(up.upstream(recheck_s=0),)), store="memory://") as gw:
        assert (await gw.runner.call("lookup_invoice", args())).ok
        up.tools.write_text("[{", encoding="utf-8")  # the server's tools/list now fails
        env = await gw.runner.call("lookup_invoice", args())
        assert env.error is not None and env.error.code == "UPSTREAM_UNAVAILABLE", env.error
        assert "re-checked" in env.error.message and env.error.effect_done is False
        assert up.dispatched() == 1


async def test_toolproof_gateway_over_stdio_blocks_a_change_mid_session_and_serves_it_once_approved(
    tmp_path: Path,
) -> None:
    """The real `toolproof gateway --config` process, driven over stdio by the SDK client: the TOML keys, the
    upstream's announcement, the envelope on the wire, an approval from another process, and the event that
    tells the client to list again."""
    up = Upstage(tmp_path, V1)
    url = f"sqlite:///{tmp_path / 'gw.sqlite3'}"
    command = [*up.upstream(notify=True).command]
    config = tmp_path / "gateway.toml"
    config.write_text(f"""
[gateway]
store = {json.dumps(url)}

[upstreams.billing]
command = {json.dumps(command)}
cwd = {json.dumps(str(REPO_ROOT))}
env = {{ {", ".join(f"{k} = {json.dumps(v)}" for k, v in child_env().items())} }}
drift = "block"
drift_recheck_s = 3600
""", encoding="utf-8")
    reworded = copy.deepcopy(V1)
    reworded[0]["description"] = "Look up one invoice by number and return it."
    async with Client(toolproof_stdio("gateway", "--config", str(config)), read_timeout_seconds=60) as client:
        assert not (await client.call_tool("lookup_invoice", args())).is_error
        async with client.listen(tools_list_changed=True) as events:
            told: list[object] = []

            async def collect() -> None:
                async for event in events:
                    told.append(event)

            collector = asyncio.create_task(collect())
            up.write(reworded)  # announced by the upstream; the gateway blocks it, the list it serves stays
            await eventually(lambda: pending(url))
            assert (await client.list_tools()).tools[0].description == V1[0]["description"]
            result = await client.call_tool("lookup_invoice", args())
            assert result.is_error and result.structured_content is not None
            assert result.structured_content["error"]["code"] == "TOOL_DEFINITION_CHANGED"
            assert up.dispatched() == 1 and told == []  # nothing the client sees changed
            toolproof_cli("gateway", "pins", "approve", "billing", "lookup_invoice", "--note", "reworded", "-s", url)
            assert not (await client.call_tool("lookup_invoice", args())).is_error
            await eventually(lambda: len(told) == 1)  # the served definition changed: the client is told
            collector.cancel()
        assert (await client.list_tools()).tools[0].description == reworded[0]["description"]
    assert up.dispatched() == 2


async def test_an_upstream_restarted_with_a_new_definition_is_re_listed_before_the_next_call(tmp_path: Path) -> None:
    """No interval and no announcement: the upstream died, and the process that replaced it lists a changed
    tool; the gateway re-lists on the restart."""
    up = Upstage(tmp_path, V1)
    async with Gateway(GatewayConfig(upstreams=(up.upstream(drift="block", recheck_s=3600),)),
                       store="memory://") as gw:
        assert (await gw.runner.call("lookup_invoice", args())).ok
        up.write(poisoned())
        lost = await gw.runner.call("lookup_invoice", {"number": "EXIT"})  # the process dies mid-call
        assert lost.error is not None and lost.error.code != "TOOL_DEFINITION_CHANGED"
        (watch,) = gw.watches
        assert watch.listings == 0 and up.listed() == 1
        env = await gw.runner.call("lookup_invoice", args())  # a new process, a new listing, then the verdict
        assert env.error is not None and env.error.code == "TOOL_DEFINITION_CHANGED", env.error
        assert watch.listings == 1 and up.dispatched() == 1


async def test_warn_serves_a_change_made_mid_session_and_keeps_it_pending(tmp_path: Path) -> None:
    up = Upstage(tmp_path, V1)
    url = f"sqlite:///{tmp_path / 'gw.sqlite3'}"
    async with Gateway(GatewayConfig(upstreams=(up.upstream(drift="warn", recheck_s=0.3),)), store=url) as gw:
        assert (await gw.runner.call("lookup_invoice", args())).ok
        up.write(poisoned())
        await asyncio.sleep(0.4)
        assert (await gw.runner.call("lookup_invoice", args())).ok and up.dispatched() == 2
        assert "IMPORTANT" in gw.toolset.get("lookup_invoice").description  # served as it is now, logged
        assert pending(url)  # and waiting for a person
