"""OAuth resource-server mode (the MCP authorization spec), end to end: a tiny authorization server on loopback
(Starlette + uvicorn, in this test, answering RFC 7662 token introspection for the tokens it issued, and only
to the resource server's own client credentials), and `toolproof serve --http --oauth FILE` and `toolproof
gateway --http --oauth FILE` in real subprocesses, reached with the official SDK client and plain HTTP."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.cli._run import toolproof_cli
from tests.e2e.test_mcp_http_auth import ACCEPT, INIT, ORDER, TARGET, as_client, meta
from tests.mcp_servers.harness import PY, REPO_ROOT, child_env, http_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
SECRET = "rs-secret-5f0c2d9e71"  # the resource server's client secret at the authorization server
GOOD_A, GOOD_B = "at-b17-3a8f6c0d2e", "at-b42-9b1e7f4a6c"
EXPIRED, OTHER_AUDIENCE, NO_SCOPE = "at-expired-71c4", "at-other-aud-5d2e", "at-read-only-8e3a"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def authorization_server(resource: str) -> AsyncIterator[tuple[str, list[str]]]:
    """The issuer's URL and the tokens it was asked about, while it serves `POST /introspect`."""
    sock = socket.create_server(("127.0.0.1", 0))
    issuer = f"http://127.0.0.1:{sock.getsockname()[1]}"
    now, asked = int(time.time()), []
    issued = {"iss": issuer, "client_id": "agent-app", "scope": "tools", "aud": resource, "exp": now + 3600}
    tokens = {GOOD_A: {**issued, "sub": "B-17"}, GOOD_B: {**issued, "sub": "B-42"},
              EXPIRED: {**issued, "sub": "B-17", "exp": now - 60},
              OTHER_AUDIENCE: {**issued, "sub": "B-17", "aud": "https://other.example/mcp"},
              NO_SCOPE: {**issued, "sub": "B-17", "scope": "read"}}
    client = "Basic " + base64.b64encode(f"toolproof-rs:{SECRET}".encode()).decode()

    async def introspect(request: Request) -> JSONResponse:
        if request.headers.get("authorization") != client:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        token = str((await request.form()).get("token"))
        asked.append(token)
        return JSONResponse({"active": True, **tokens[token]} if token in tokens else {"active": False})

    app = Starlette(routes=[Route("/introspect", introspect, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield issuer, asked
    finally:
        server.should_exit = True
        await task
        sock.close()


def oauth_file(tmp_path: Path, issuer: str, resource: str) -> Path:
    path = tmp_path / "oauth.toml"
    path.write_text(f'issuer = "{issuer}"\nresource = "{resource}"\nintrospection_endpoint = "{issuer}/introspect"\n'
                    'scopes = ["tools"]\nclient_id = "toolproof-rs"\nclient_secret_env = "TP_OAUTH_SECRET"\n',
                    encoding="utf-8")
    return path


@asynccontextmanager
async def resource_server(args: list[str], port: int) -> AsyncIterator[str]:
    """`python -m toolproof ARGS --http --port PORT` (a fixed port: the resource URL names it)."""
    proc = await asyncio.create_subprocess_exec(
        PY, "-m", "toolproof", *args, "--http", "--host", "127.0.0.1", "--port", str(port), cwd=REPO_ROOT,
        env={**os.environ, **child_env(TP_OAUTH_SECRET=SECRET)}, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    seen: list[str] = []
    try:
        async with asyncio.timeout(30):
            while not any("serving MCP on" in line for line in seen):
                line = (await proc.stderr.readline()).decode(errors="replace")
                if not line:
                    raise RuntimeError(f"server exited early: {''.join(seen)}")
                seen.append(line)
        found = re.search(r"serving MCP on (\S+)", seen[-1])
        assert found is not None
        drain = asyncio.create_task(proc.stderr.read())
        yield found.group(1)
        drain.cancel()
    finally:
        proc.terminate()
        await proc.wait()


async def post(url: str, token: str | None) -> httpx.Response:
    headers = {**ACCEPT, **({"authorization": f"Bearer {token}"} if token else {})}
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(url, json=INIT, headers=headers)


@pytest.mark.parametrize("command", [["serve", TARGET], ["gateway", "--upstream", "shop=SHOP_URL", "--trust", "shop"]])
async def test_oauth_resource_server_accepts_issued_tokens_as_their_subject(command: list[str], tmp_path: Path) -> None:
    port = _free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    metadata_url = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
    async with authorization_server(resource) as (issuer, asked), http_server("serve", TARGET) as shop_url:
        args = [a.replace("SHOP_URL", shop_url) for a in command] + ["--oauth", str(oauth_file(tmp_path, issuer,
                                                                                                 resource))]
        async with resource_server(args, port) as url:
            assert url == resource
            async with httpx.AsyncClient(timeout=10) as http:
                described = (await http.get(metadata_url)).json()
            assert described["resource"].rstrip("/") == resource
            assert [a.rstrip("/") for a in described["authorization_servers"]] == [issuer]
            assert described["scopes_supported"] == ["tools"]

            for token in (None, "at-never-issued", EXPIRED, OTHER_AUDIENCE):
                refused = await post(url, token)
                assert refused.status_code == 401, (token, refused.status_code)
                challenge = refused.headers["www-authenticate"]
                assert challenge.startswith("Bearer") and f'resource_metadata="{metadata_url}"' in challenge
            assert (await post(url, NO_SCOPE)).status_code == 403  # a valid token without the required scope
            assert {"at-never-issued", EXPIRED, OTHER_AUDIENCE, NO_SCOPE} <= set(asked)

            async with as_client(url, GOOD_A) as alice, as_client(url, GOOD_B) as bob:
                first = (await alice.call_tool("place_order", ORDER, meta=meta("conv-a"))).structured_content
                assert first["ok"] is True, first
                again = (await alice.call_tool("place_order", ORDER, meta=meta("conv-a", "B-17"))).structured_content
                assert again["meta"].get("replayed") is True  # the token's subject is the principal
                admin = (await alice.call_tool("place_order", ORDER, meta=meta("conv-c", "admin"))).structured_content
                assert admin["ok"] is False and admin["error"]["code"] == "PRINCIPAL_MISMATCH"
                order = {"order_id": first["result"]["order_id"]}
                peek = await bob.call_tool("get_order_status", order, meta=meta("conv-b"))
                assert peek.structured_content["error"]["class"] == "not_found"  # placed as B-17, asked as B-42
                mine = await alice.call_tool("get_order_status", order, meta=meta("conv-a"))
                assert mine.structured_content["ok"] is True


def test_a_bad_oauth_file_is_a_clear_error_that_never_shows_the_secret(tmp_path: Path) -> None:
    good = oauth_file(tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:8000/mcp")
    missing = toolproof_cli("serve", TARGET, "--http", "--oauth", str(good), code=2)  # TP_OAUTH_SECRET unset
    assert "TP_OAUTH_SECRET" in missing.stderr and "oauth.toml" in missing.stderr
    remote = tmp_path / "remote.toml"
    remote.write_text(good.read_text().replace('introspection_endpoint = "http://127.0.0.1:9/introspect"',
                                               'introspection_endpoint = "http://auth.example.com/introspect"'))
    plain = toolproof_cli("serve", TARGET, "--http", "--oauth", str(remote), env={"TP_OAUTH_SECRET": SECRET}, code=2)
    assert "must be https" in plain.stderr and SECRET not in plain.stderr + plain.stdout
    both = toolproof_cli("serve", TARGET, "--http", "--oauth", str(good), "--tokens-env", "X", code=2)
    assert "not several" in both.stderr
