"""The stdio server outlives what it is sent and what its tools return: text UTF-8 cannot carry goes out as U+FFFD,
and a line that is not a JSON-RPC message gets its JSON-RPC error (-32700 / -32600) instead of silence."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp.client.client import Client

from tests.mcp_servers.harness import PY, REPO_ROOT, child_env, toolproof_stdio

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
TARGET = "tests.mcp_servers.odd_text_toolset:toolset"


async def test_a_lone_surrogate_in_a_result_does_not_stop_the_server() -> None:
    async with Client(toolproof_stdio("serve", TARGET), read_timeout_seconds=30) as client:
        first = await client.call_tool("list_files", {"folder": "a"})
        assert not first.is_error
        assert first.structured_content["result"][0] == "report-\ufffd.txt"
        second = await client.call_tool("list_files", {"folder": "b"})  # still serving
        assert second.structured_content["result"][1] == "b"


class RawSession:
    """JSON-RPC lines written to and read from a `toolproof serve` subprocess, nothing in between."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        await self.proc.stdin.drain()

    async def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        assert line, "the server closed stdout"
        return json.loads(line)  # type: ignore[no-any-return]

    async def request(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode())
        return await self.receive()


async def test_lines_that_are_not_messages_get_their_errors_and_the_server_keeps_serving() -> None:
    proc = await asyncio.create_subprocess_exec(
        PY, "-m", "toolproof", "serve", TARGET, cwd=REPO_ROOT, env=child_env(),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    raw = RawSession(proc)
    try:
        init = await raw.request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                   "clientInfo": {"name": "raw", "version": "0"}})
        assert "result" in init
        await raw.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        await raw.send(b"this is not json")
        assert (await raw.receive())["error"]["code"] == -32700
        await raw.send(b'{"jsonrpc": "2.0", "id": 7, "no": "method"}')
        assert (await raw.receive()) == {"jsonrpc": "2.0", "id": 7,
                                         "error": {"code": -32600, "message": "Invalid Request"}}
        # A tool name with a lone surrogate: the error that names it must still reach the wire.
        unknown = await raw.request(8, "tools/call", {"name": "x\ud800", "arguments": {}})
        assert unknown["id"] == 8
        assert "error" in unknown or unknown["result"]["isError"]
        listed = await raw.request(9, "tools/list", {})
        assert [t["name"] for t in listed["result"]["tools"]] == ["list_files"]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 30)
