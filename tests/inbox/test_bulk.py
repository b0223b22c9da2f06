"""Bulk approve in the inbox: several pending requests, one POST, each decided once and audited on its own;
one already decided is reported, not applied again. Over HTTP (Starlette's client is httpx)."""

from __future__ import annotations

from starlette.testclient import TestClient

import toolproof
from tests.approvals._tools import payments
from tests.inbox.test_security import sign_in
from toolproof.approvals import deny
from toolproof.inbox import create_app
from toolproof.stores import MemoryStore

AMOUNTS = (20_000, 30_000, 40_000)


def test_one_post_approves_the_ticked_requests_each_once_then_each_runs_once() -> None:
    paid: list[int] = []
    store = MemoryStore()
    runner = toolproof.Runner(payments(paid), store=store)
    ctx = toolproof.CallContext(conversation_id="c-9", principal="buyer-1")

    def pay(amount: int) -> toolproof.Envelope:
        return runner.call_sync("pay", {"amount_rs": amount, "to": "Kisan Co-op", "api_token": "t-0123456789ab"},
                                context=ctx)

    ids = [str(pay(a).meta.extra["approval_id"]) for a in AMOUNTS]
    deny(store, ids[2], by="bob", note="duplicate invoice")
    c = TestClient(create_app(store), base_url="http://127.0.0.1:8765", follow_redirects=False)
    page = c.get("/approvals")
    assert page.status_code == 200 and 'form="bulk"' in page.text
    csrf = sign_in(c, "alice")
    assert c.post("/approvals/bulk", data={"rid": ids[:2]}).status_code == 403  # no CSRF token
    done = c.post("/approvals/bulk", data={"csrf": csrf, "rid": [*ids, ids[0]], "note": "batch ok"})
    assert done.status_code == 303
    flash = c.get("/approvals").text
    assert 'class="flash err"' in flash and "already denied by bob" in flash  # reported, not applied
    statuses = [(r.status, r.decided_by) for r in (store.approval_get(i) for i in ids) if r is not None]
    assert statuses == [("approved", "alice"), ("approved", "alice"), ("denied", "bob")]
    decisions = [r for r in store.list_audit(tool="pay") if r.outcome == "approval_approved"]
    assert sorted(r.arguments["approval_id"] for r in decisions) == sorted(ids[:2])  # each audited, once
    assert all(r.principal == "alice" and r.arguments["note"] == "batch ok" for r in decisions)
    c.post("/approvals/bulk", data={"csrf": csrf, "rid": ids[:2]})
    assert "already approved by alice" in c.get("/approvals").text
    assert len([r for r in store.list_audit(tool="pay") if r.outcome == "approval_approved"]) == 2
    assert [pay(a).ok for a in AMOUNTS] == [True, True, False]
    assert [pay(a).meta.replayed for a in AMOUNTS[:2]] == [True, True]
    assert paid == [20_000, 30_000]
    runner.close()


def test_bulk_needs_a_name_and_a_ticked_request() -> None:
    c = TestClient(create_app(MemoryStore()), base_url="http://127.0.0.1:8765", follow_redirects=False)
    c.get("/approvals")
    csrf = str(c.cookies.get("toolproof_csrf"))
    c.post("/approvals/bulk", data={"csrf": csrf, "rid": ["apr_x"]})
    assert "sign with your name first" in c.get("/approvals").text
    sign_in(c, "alice")
    c.post("/approvals/bulk", data={"csrf": csrf})
    assert "Tick the requests to approve" in c.get("/approvals").text
    missing = c.post("/approvals/bulk", data={"csrf": csrf, "rid": ["apr_none"]})
    assert missing.status_code == 303 and "no approval request" in c.get("/approvals").text
