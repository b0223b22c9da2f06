"""Writes whose outcome is unknown, in the inbox: paged to the last one with "N of M", and settled by the tool's
own verify hook when the inbox has the toolset (done, not done, cannot tell), each ask audited with who asked.

The outside world is the verify tests' shop (a real SQLite file keyed by the idempotency key); the journal is
the in-memory store, a SQLite file or the real PostgreSQL server."""

from __future__ import annotations

import html
import re
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.inbox.test_security import csrf_of, sign_in
from tests.pipeline.test_verify import ORDER, Shop, toolset
from toolproof import CallContext, Runner, Toolset
from toolproof.inbox import create_app
from toolproof.inbox._app import PAGE
from toolproof.stores import MemoryStore, Store
from toolproof.stores._intent import Intent


@pytest.fixture
def store(any_store: Store) -> Store:
    return any_store


def client(store: Store, tools: Toolset | None = None) -> TestClient:
    return TestClient(create_app(store, tools=tools), base_url="http://127.0.0.1:8765", follow_redirects=False)


def unknowns(shop: Shop, store: Store) -> tuple[str, str]:
    """Two orders left unknown (the reply timed out and verify could not tell at the time): one that committed,
    one that never reached the shop."""
    shop.after_s, shop.verify_raises = 0.3, True
    keys = []
    agents = store if isinstance(store, MemoryStore) else store.url  # their own connection, closed with them
    with Runner(toolset(shop), store=agents, lease_s=0.5) as runner:
        for conversation, commit in (("c1", True), ("c2", False)):
            shop.commit = commit
            lost = runner.call_sync("place_order", ORDER, context=CallContext(conversation_id=conversation,
                                                                              principal="B-7"))
            assert lost.error is not None and lost.error.idempotency_key, lost.to_dict()
            keys.append(lost.error.idempotency_key)
        runner.flush()
    time.sleep(0.6)  # both attempts have ended, and so have their leases
    return keys[0], keys[1]


def flash_after(c: TestClient, key: str, token: str) -> str:
    """Press Verify for `key`; the page the redirect leads to, and its flash."""
    pressed = c.post(f"/journal/{key}/verify", data={"csrf": token})
    assert pressed.status_code == 303 and pressed.headers["location"] == "/stops"  # POST-redirect-GET
    page = c.get("/stops").text
    found = re.search(r'<div class="flash[^"]*" role="status">(.*?)</div>', page)
    assert found, "no flash after the action"
    return html.unescape(found[1])


def test_verify_settles_done_and_not_done_and_says_what_it_found(store: Store, tmp_path: Path) -> None:
    shop = Shop(tmp_path / "shop.db")
    done_key, lost_key = unknowns(shop, store)
    c = client(store, toolset(shop))
    token = sign_in(c, "alice")
    page = c.get("/stops").text
    assert page.count('data-testid="verify-available">verify available</span>') == 2
    assert "last said: cannot tell (verify could not tell: it raised ConnectionError" in page  # the runner's ask
    assert "tok-SECRET-1" not in page  # what a hook's error said is redacted
    shop.verify_raises = False
    said = flash_after(c, done_key, token)
    assert said.startswith(f"{done_key}: verify said done (verify found the effect); settled as done")
    entry = store.journal_get(done_key)
    assert entry is not None and entry.status == "done" and entry.outcome["result"]["sku"] == "A-1"
    assert flash_after(c, lost_key, token).startswith(f"{lost_key}: verify said not done")
    assert store.journal_get(lost_key) is None  # released: the agent's resend places it
    assert 'data-testid="unknown-empty"' in c.get("/stops").text
    assert not [s for s in store.list_stops(resolved=False) if s.idempotency_key in (done_key, lost_key)]
    trail = [(r.outcome, r.principal, r.code) for r in store.audit_for_key(done_key) if r.schema_version is None]
    assert trail == [("reconciled", "B-7", "RECONCILED"), ("verify_asked", "alice", "VERIFY_DONE")]
    assert "verify said done: verify found the effect" in c.get(f"/trail/{done_key}").text
    assert len(shop.rows()) == 1
    again = flash_after(c, done_key, token)
    assert again == f"Not applied: the entry {done_key} is done, not unknown: nothing to verify"


def test_a_verify_that_cannot_tell_leaves_it_unknown_and_the_page_says_so(store: Store, tmp_path: Path) -> None:
    shop = Shop(tmp_path / "shop.db")
    key, _ = unknowns(shop, store)
    c = client(store, toolset(shop))
    token = sign_in(c, "bob")
    said = flash_after(c, key, token)
    assert said.startswith(f"{key}: verify said cannot tell (verify could not tell: it raised ConnectionError")
    assert "still unknown" in said and "tok-SECRET-1" not in said
    entry = store.journal_get(key)
    assert entry is not None and entry.status == "unknown"
    asked = [r for r in store.audit_for_key(key) if r.outcome == "verify_asked"]
    assert [(r.principal, r.code) for r in asked] == [("bob", "VERIFY_UNKNOWN")]
    assert "tok-SECRET-1" not in str(asked[0].arguments)


def test_verify_needs_the_toolset_a_hook_a_name_and_the_csrf_token(store: Store, tmp_path: Path) -> None:
    shop = Shop(tmp_path / "shop.db")
    key, _ = unknowns(shop, store)
    shop.verify_raises = False
    bare = client(store)
    token = sign_in(bare, "alice")
    assert 'data-testid="verify-available"' not in bare.get("/stops").text
    assert "started without the agents' toolset" in html.unescape(bare.get("/stops").text)
    assert "Not applied: the inbox was started without" in flash_after(bare, key, token)
    c = client(store, toolset(shop))
    assert c.post(f"/journal/{key}/verify", data={"csrf": "forged"}).status_code == 403
    c.cookies.set("toolproof_operator", "mallory")  # a name this server did not sign signs nobody in
    assert "Not applied: sign with your name first." in flash_after(c, key, csrf_of(c))
    entry = store.journal_get(key)
    assert entry is not None and entry.status == "unknown" and len(shop.rows()) == 1
    c.cookies.delete("toolproof_operator")
    assert "Not applied: no journal entry has the key nope" in flash_after(c, "nope", sign_in(c, "alice"))


def test_every_unknown_write_is_reachable_page_by_page(store: Store) -> None:
    count, now = PAGE * 2 + 30, time.time()
    for k in range(count):
        assert store.journal_claim(Intent(
            key=f"tp1_u{k:04d}", operation_id=f"op{k}", tool="pay", fingerprint="f", arguments={"k": k},
            status="unknown", created_at=now - 1000 + k // 2, updated_at=now, owner="w", lease_until=0.0))
    c = client(store)
    seen: list[str] = []
    path = "/stops"
    counts = []
    while True:
        page = c.get(path).text
        counts.append(re.search(r'data-testid="unknown-count">(.*?)</p>', page)[1])  # type: ignore[index]
        seen += re.findall(r'<a href="/trail/(tp1_u\d+)"><code>', page)
        found = re.search(r'href="([^"]+)" data-testid="unknown-next"', page)
        if found is None:
            break
        path = html.unescape(found[1])
    assert seen == [f"tp1_u{k:04d}" for k in reversed(range(count))]  # newest first, each once, to the last
    assert counts == [f"Showing 1–100 of {count} writes whose outcome is unknown, newest first.",
                      f"Showing 101–200 of {count} writes whose outcome is unknown, newest first.",
                      f"Showing 201–{count} of {count} writes whose outcome is unknown, newest first."]
    store.journal_resolve("tp1_u0229", done=False, outcome=None, resolution="x", now=now)  # settled meanwhile
    second = c.get(path).text
    assert "tp1_u0029" in second and "tp1_u0030" not in second  # a keyset: the last page still starts after 0030
