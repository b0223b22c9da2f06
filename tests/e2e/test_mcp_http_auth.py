"""Authentication over streamable HTTP: `toolproof serve --http` and `toolproof gateway --http` in real
subprocesses, the official SDK client (and plain HTTP requests for status codes) over real sockets."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.mcp_servers.harness import PY, REPO_ROOT, TIME_SERVER, child_env, http_server
from toolproof.mcp import META_CONVERSATION_ID, META_PRINCIPAL

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
TARGET = "toolproof.examples.wholesaler:toolset"
TOKEN_A = "tok-alpha-0123456789abcdef"
TOKEN_B = "tok-bravo-0123456789abcdef"
ORDER = {"crop": "onion", "quantity_kg": 40, "delivery_date": "2031-01-15"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "probe", "version": "0"}}}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def tokens_file(tmp_path: Path) -> Path:
    file = tmp_path / "tokens.txt"
    file.write_text(f"# principal token\nB-17 {TOKEN_A}\nB-42 {TOKEN_B}\n", encoding="utf-8")
    return file


@asynccontextmanager
async def as_client(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    async with Client(transport, read_timeout_seconds=30) as client:
        yield client


def meta(conversation: str, principal: str | None = None) -> Any:
    out: dict[str, Any] = {META_CONVERSATION_ID: conversation}
    if principal is not None:
        out[META_PRINCIPAL] = principal
    return out


async def post(url: str, headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(url, json=INIT, headers={**ACCEPT, **headers})


async def test_no_token_or_a_wrong_token_is_401_and_a_good_one_serves(tmp_path: Path) -> None:
    async with http_server("serve", TARGET, "--tokens-file", str(tokens_file(tmp_path))) as url:
        missing = await post(url, {})
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
        wrong = await post(url, {"authorization": "Bearer tok-alpha-0123456789abcdeX"})
        assert wrong.status_code == 401
        assert (await post(url, {"authorization": f"Bearer {TOKEN_A}"})).status_code == 200

        with pytest.raises(Exception, match="unhandled errors"):  # the official client cannot even connect
            async with as_client(url, None) as client:
                await client.list_tools()
        async with as_client(url, TOKEN_A) as client:
            assert "place_order" in {t.name for t in (await client.list_tools()).tools}


async def test_host_and_origin_of_another_site_are_refused(tmp_path: Path) -> None:
    good = {"authorization": f"Bearer {TOKEN_A}"}
    async with http_server("serve", TARGET, "--tokens-file", str(tokens_file(tmp_path))) as url:
        assert (await post(url, {**good, "host": "evil.example"})).status_code == 421
        assert (await post(url, {**good, "host": "evil.example:8000"})).status_code == 421
        assert (await post(url, {**good, "origin": "http://evil.example"})).status_code == 403
        assert (await post(url, {**good, "origin": "https://evil.example"})).status_code == 403
        assert (await post(url, good)).status_code == 200


@pytest.mark.parametrize("command", [["serve", TARGET], ["gateway", "--upstream", f"time={' '.join(TIME_SERVER)}"]])
def test_a_public_bind_without_authentication_refuses_to_start(command: list[str]) -> None:
    done = subprocess.run(
        [PY, "-m", "toolproof", *command, "--http", "--host", "0.0.0.0", "--port", "0"],
        cwd=REPO_ROOT, env=child_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "without authentication" in done.stderr and "0.0.0.0" in done.stderr
    assert "serving MCP" not in done.stderr


def test_bad_token_sources_are_clear_errors_that_never_show_a_token(tmp_path: Path) -> None:
    short = tmp_path / "short.txt"
    short.write_text("B-17 tooshort\n", encoding="utf-8")
    for args, env, expected in [
        (["--tokens-file", str(short)], {}, "at least 16"),
        (["--tokens-file", str(tmp_path / "absent.txt")], {}, "cannot read the tokens file"),
        (["--tokens-env", "TP_TEST_TOKENS"], {}, "TP_TEST_TOKENS"),
        (["--tokens-env", "TP_TEST_TOKENS"], {"TP_TEST_TOKENS": f"B-17 {TOKEN_A}, B-42 {TOKEN_A}"}, "twice"),
    ]:
        done = subprocess.run(
            [PY, "-m", "toolproof", "serve", TARGET, "--http", "--port", "0", *args],
            cwd=REPO_ROOT, env={**child_env(), **env}, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=60,
        )
        assert done.returncode == 2 and expected in done.stderr, done.stderr
        assert "tooshort" not in done.stderr and TOKEN_A not in done.stderr


@pytest.mark.parametrize("command", [["serve", TARGET], ["gateway", "--upstream", "shop=SHOP_URL", "--trust", "shop"]])
async def test_another_identity_can_neither_replay_a_conversation_nor_claim_a_principal(
    command: list[str], tmp_path: Path
) -> None:
    tokens = ["--tokens-env", "TP_TEST_TOKENS"]
    env = {"TP_TEST_TOKENS": f"B-17 {TOKEN_A}\nB-42 {TOKEN_B}"}
    async with http_server("serve", TARGET) as shop_url, \
            http_server(*[a.replace("SHOP_URL", shop_url) for a in command], *tokens, env=env) as url, \
            as_client(url, TOKEN_A) as alice, as_client(url, TOKEN_B) as bob:
        first = (await alice.call_tool("place_order", ORDER, meta=meta("conv-a"))).structured_content
        assert first["ok"] is True and first["result"]["note"] == "New order placed", first
        again = (await alice.call_tool("place_order", ORDER, meta=meta("conv-a", "B-17"))).structured_content
        assert again["meta"].get("replayed") is True  # the owner still gets the journal's answer

        stolen = (await bob.call_tool("place_order", ORDER, meta=meta("conv-a", "B-17"))).structured_content
        assert stolen["ok"] is False and stolen["error"]["code"] == "PRINCIPAL_MISMATCH"
        assert "result" not in stolen and str(first["result"]["order_id"]) not in str(stolen["error"])
        borrowed = (await bob.call_tool("place_order", ORDER, meta=meta("conv-a"))).structured_content
        assert borrowed["ok"] is False and borrowed["error"]["code"] == "CONVERSATION_NOT_YOURS"
        admin = (await bob.call_tool("place_order", ORDER, meta=meta("conv-b", "admin"))).structured_content
        assert admin["ok"] is False and admin["error"]["class"] == "permission_denied"

        own = (await bob.call_tool("place_order", ORDER, meta=meta("conv-b"))).structured_content
        assert own["ok"] is True and own["result"]["order_id"] != first["result"]["order_id"]
        peek = await bob.call_tool("get_order_status", {"order_id": first["result"]["order_id"]},
                                   meta=meta("conv-b"))
        assert peek.structured_content["error"]["class"] == "not_found"  # placed as B-42, not as admin or B-17
        mine = await alice.call_tool("get_order_status", {"order_id": first["result"]["order_id"]},
                                     meta=meta("conv-a"))
        assert mine.structured_content["ok"] is True


@pytest.mark.parametrize("command", [["serve", TARGET], ["gateway", "--upstream", f"time={' '.join(TIME_SERVER)}"]])
async def test_the_host_header_is_parsed_not_prefix_matched(tmp_path: Path, command: list[str]) -> None:
    good = {"authorization": f"Bearer {TOKEN_A}"}
    async with http_server(*command, "--tokens-file", str(tokens_file(tmp_path)), timeout_s=60) as url:
        port = httpx.URL(url).port
        for forged in (f"127.0.0.1:{port}@evil.example", "127.0.0.1:8000/evil", "127.0.0.1:x", "127.0.0.1:",
                       "localhost:1 evil.example", "127.0.0.1.evil.example:80", "[::1]:1@evil.example"):
            assert (await post(url, {**good, "host": forged})).status_code == 421, forged
        for spelled in (f"LOCALHOST:{port}", f"Localhost:{port}", f"127.0.0.1:{port}", "localhost"):
            assert (await post(url, {**good, "host": spelled})).status_code == 200, spelled
        assert (await post(url, {**good, "origin": f"http://127.0.0.1:{port}@evil.example"})).status_code == 403
        assert (await post(url, {**good, "origin": f"http://LOCALHOST:{port}"})).status_code == 200
