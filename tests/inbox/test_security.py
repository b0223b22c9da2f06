"""What keeps the inbox private, checked over HTTP: Host header, token, CSRF, no secret on a page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Annotated, Any

import pytest
from starlette.testclient import TestClient

import toolproof
from tests._data import REPO_ROOT
from tests.cli._run import toolproof_cli
from toolproof.inbox import create_app
from toolproof.stores import MemoryStore, open_store

SECRET = "tok-9secret-abcdef0123456"
TOKEN = "a-long-enough-token-0123"


def gated_store() -> tuple[MemoryStore, str]:
    @toolproof.tool(effect="write", approval="always")
    def wire(amount_rs: int, api_token: Annotated[str, toolproof.Secret]) -> dict[str, int]:
        """Send a wire.

        Use it to pay. Returns the wire.
        """
        return {"amount_rs": amount_rs}

    store = MemoryStore()
    runner = toolproof.Runner(toolproof.Toolset([wire]), store=store)
    envelope = runner.call_sync("wire", {"amount_rs": 5, "api_token": SECRET})
    runner.flush()
    return store, str(envelope.meta.extra["approval_id"])


def client(app: Any) -> TestClient:
    return TestClient(app, base_url="http://127.0.0.1:8765", follow_redirects=False)


def csrf_of(c: TestClient) -> str:
    c.get("/approvals")
    return str(c.cookies.get("toolproof_csrf"))


def sign_in(c: TestClient, name: str) -> str:
    """Sign in as the page does (the server signs the name); returns the CSRF token."""
    token = csrf_of(c)
    assert c.post("/operator", data={"csrf": token, "name": name}).status_code == 303
    return token


def test_a_foreign_host_header_is_refused() -> None:
    store, _ = gated_store()
    c = client(create_app(store))
    assert c.get("/approvals").status_code == 200
    assert c.get("/approvals", headers={"host": "evil.example"}).status_code == 400


def test_posts_need_the_csrf_token_and_the_same_origin() -> None:
    store, rid = gated_store()
    c = client(create_app(store))
    token = sign_in(c, "alice")
    assert c.post(f"/approvals/{rid}/approve", data={"note": "x"}).status_code == 403
    assert c.post(f"/approvals/{rid}/approve", data={"csrf": "forged"}).status_code == 403
    cross = c.post(f"/approvals/{rid}/approve", data={"csrf": token}, headers={"origin": "http://evil.example"})
    assert cross.status_code == 403
    before = store.approval_get(rid)
    assert before is not None and before.status == "pending"
    ok = c.post(f"/approvals/{rid}/approve", data={"csrf": token})
    after = store.approval_get(rid)
    assert ok.status_code == 303 and after is not None and after.decided_by == "alice"
    again = c.post(f"/approvals/{rid}/approve", data={"csrf": token})
    assert again.status_code == 303 and again.headers["location"] == "/approvals"  # POST-redirect-GET
    shown = c.get("/approvals").text
    assert "Not applied" in shown and "already approved by alice" in shown
    assert "already approved" not in c.get("/approvals").text  # the flash is shown once


def test_a_token_guards_every_page_when_set() -> None:
    store, _ = gated_store()
    c = client(create_app(store, token=TOKEN))
    assert c.get("/approvals").status_code == 401
    assert c.get("/approvals", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert c.get("/?token=wrong").status_code == 401
    entered = c.get(f"/approvals?token={TOKEN}")
    assert entered.status_code == 303 and c.get("/approvals").status_code == 200


@pytest.mark.parametrize("given", ["é", "tökén-0123456789abcdef", "\u202e\u200b", "日本"])
def test_a_non_ascii_token_is_refused_not_a_crash(given: str) -> None:
    store, _ = gated_store()
    c = client(create_app(store, token=TOKEN))
    assert c.get("/approvals", params={"token": given}).status_code == 401
    c.cookies.set("toolproof_token", "x")
    assert c.get("/approvals", headers={"authorization": f"Bearer {given}".encode()}).status_code == 401


def test_a_non_ascii_csrf_field_is_refused_not_a_crash() -> None:
    store, rid = gated_store()
    c = client(create_app(store))
    csrf_of(c)
    c.cookies.set("toolproof_operator", "alice")
    assert c.post(f"/approvals/{rid}/approve", data={"csrf": "jeton-é"}).status_code == 403


def test_secrets_never_reach_a_page() -> None:
    store, _ = gated_store()
    c = client(create_app(store))
    for path in ("/approvals", "/stops", "/audit", "/dashboard"):
        page = c.get(path)
        assert page.status_code == 200 and SECRET not in page.text, path
    assert "amount_rs" in c.get("/approvals").text


@pytest.mark.e2e
def test_ui_refuses_to_listen_beyond_loopback_without_a_token(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'tp.sqlite3'}"
    refused = toolproof_cli("ui", "--host", "0.0.0.0", "--store", url, code=2)
    assert "give --token" in refused.stderr


@pytest.mark.e2e
def test_ui_beyond_loopback_prints_its_real_port_and_names_allow_host(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'tp.sqlite3'}"
    open_store(url).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPROOF_")}
    env["PYTHONPATH"] = f"{REPO_ROOT / 'src'}{os.pathsep}{REPO_ROOT}"
    proc = subprocess.Popen([sys.executable, "-m", "toolproof", "ui", "--store", url, "--host", "0.0.0.0",
                             "--port", "0", "--token", TOKEN], env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        first, second = proc.stderr.readline(), proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    port = re.search(r"http://0\.0\.0\.0:(\d+)/", first)
    assert port and int(port[1]) > 0, first
    assert "--allow-host" in second and "127.0.0.1" in second
