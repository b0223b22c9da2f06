"""The console's store queries on every store (memory, SQLite, PostgreSQL): every row reachable by its cursor,
counted, matched by prefix ignoring case, cut by zoned times; and the pages that use them, over HTTP."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import toolproof
from tests.approvals._tools import payments
from tests.inbox._fill import ALIKE_STOPS, DECIDED, PENDING, STEP_S, Filled, fill_store, record
from tests.inbox.test_security import sign_in
from toolproof.inbox import create_app
from toolproof.inbox._security import Signer
from toolproof.stores import MemoryStore, SqliteStore, Store
from toolproof.stores._approval import ApprovalRequest
from toolproof.stores._query import AuditQuery

RECORDS = 1_000


@pytest.fixture
def filled(any_store: Store) -> tuple[Store, Filled]:
    return any_store, fill_store(any_store, RECORDS)


def walk_audit(store: Store, query: AuditQuery, order: Any, limit: int) -> tuple[list[str], list[int]]:
    ids, starts, cursor = [], [], None
    while True:
        page = store.audit_page(query, order=order, limit=limit, cursor=cursor)
        ids += [r.call_id for r in page.rows]
        starts.append(page.start)
        if page.next is None:
            return ids, starts
        cursor = page.next


def test_every_audit_record_is_reachable_both_ways_and_counted(filled: tuple[Store, Filled]) -> None:
    store, data = filled
    newest, starts = walk_audit(store, AuditQuery(), "newest", 300)
    assert newest == data.call_ids[::-1] and starts == [0, 300, 600, 900]
    oldest, _ = walk_audit(store, AuditQuery(), "oldest", 300)
    assert oldest == data.call_ids
    assert store.audit_total() == RECORDS
    assert store.audit_page(AuditQuery(), limit=10).total == RECORDS


def test_search_matches_a_prefix_ignoring_case_and_a_time_range(filled: tuple[Store, Filled]) -> None:
    store, data = filled
    weather = store.audit_page(AuditQuery(tool="WEATH"), limit=1_000)
    assert weather.total == data.by_tool["Weather"] == len(weather.rows)
    target = data.call_ids[17]
    found = store.audit_page(AuditQuery(text=target[:9].upper()), limit=50)
    assert target in [r.call_id for r in found.rows]
    assert all(r.call_id.startswith(target[:9]) or (r.idempotency_key or "").startswith(target[:9])
               for r in found.rows)
    key = record(15, data.first_at).idempotency_key
    assert key is not None and [r.call_id for r in store.audit_page(AuditQuery(text=key.upper())).rows] == [
        data.call_ids[15]]
    ranged = store.audit_page(AuditQuery(since=data.at(100), until=data.at(150)), order="oldest", limit=100)
    assert [r.call_id for r in ranged.rows] == data.call_ids[100:150]
    assert store.audit_page(AuditQuery(tool="%")).total == 0  # LIKE's wildcards are text here
    assert store.audit_page(AuditQuery(principal="b-1_")).total == 0
    assert store.audit_page(AuditQuery(principal="b-1")).total == sum(
        record(i, 0).principal.startswith("B-1") for i in range(RECORDS))  # type: ignore[union-attr]
    assert [r.call_id for r in store.audit_for_call(data.call_ids[3])] == [data.call_ids[3]]
    assert [r.call_id for r in store.audit_for_key(key)] == [data.call_ids[15]]


def test_waiting_requests_page_in_expiry_order_and_decided_ones_by_decision(filled: tuple[Store, Filled]) -> None:
    store, data = filled
    now = data.first_at + RECORDS * STEP_S + 3600
    seen, cursor = [], None
    while True:
        page = store.approval_page(pending=True, now=now, limit=100, cursor=cursor)
        assert page.total == PENDING and page.start == len(seen)
        seen += [r.id for r in page.rows]
        if page.next is None:
            break
        cursor = page.next
    assert seen == data.pending
    decided = store.approval_page(pending=False, now=now, limit=100)
    stamps = [r.decided_at for r in decided.rows]
    assert decided.total == DECIDED and stamps == sorted(stamps, reverse=True)  # type: ignore[type-var]
    later = store.approval_page(pending=True, now=now + 10**6, limit=10)  # all expired by then
    assert later.total == 0 and store.approval_page(pending=False, now=now + 10**6).total == PENDING + DECIDED


def test_alike_stops_form_one_group_and_the_tally_adds_what_came_since(filled: tuple[Store, Filled]) -> None:
    store, data = filled
    groups = store.stop_groups()
    assert groups[0].count == ALIKE_STOPS and groups[0].reason == "circuit_open"
    assert sum(g.count for g in groups) == data.stops
    assert store.stop_page(limit=100, group=groups[0].key).total == ALIKE_STOPS
    assert [len(store.stop_page(limit=5).rows), store.stop_page(limit=5).next is not None] == [5, True]
    tally, upto = store.audit_tally()
    assert sum(t.count for t in tally) == RECORDS
    store.append_audit([record(RECORDS + k, data.first_at) for k in range(5)])
    more, later = store.audit_tally(upto)
    assert sum(t.count for t in more) == 5 and later > upto


# --- the pages, over HTTP -----------------------------------------------------------------------------------
def client(store: Store, **kw: Any) -> TestClient:
    return TestClient(create_app(store, **kw), base_url="http://127.0.0.1:8765", follow_redirects=False)


def gated(store: Store, arguments: dict[str, Any] | None = None) -> str:
    now = time.time()
    request = ApprovalRequest(id="apr_1", at=now, tool="pay", call_id="c0ffee",
                              arguments=arguments or {"amount_rs": 22_000}, idempotency_key="tp1_k1",
                              fingerprint="f", reason="above the limit", expires_at=now + 3600)
    assert store.approval_add(request)
    return request.id


def test_an_operator_cookie_set_elsewhere_decides_nothing() -> None:
    store = MemoryStore()
    rid = gated(store)
    c = client(store)
    token = sign_in(c, "alice")
    c.cookies.delete("toolproof_operator")
    c.cookies.set("toolproof_operator", "mallory")  # what a page on another local port can do (cookies ignore ports)
    assert "operator: —" in c.get("/approvals").text
    c.post(f"/approvals/{rid}/approve", data={"csrf": token})
    pending = store.approval_get(rid)
    assert pending is not None and pending.status == "pending"
    other = Signer()  # a name signed by another server (another key) is refused too
    c.cookies.delete("toolproof_operator")
    c.cookies.set("toolproof_operator", other.sign("operator", "mallory"))
    c.post(f"/approvals/{rid}/approve", data={"csrf": token})
    assert (store.approval_get(rid) or pending).status == "pending"
    sign_in(c, "alice")
    c.post(f"/approvals/{rid}/approve", data={"csrf": token})
    assert (store.approval_get(rid) or pending).decided_by == "alice"


def test_flash_never_comes_from_the_url_and_errors_are_pages() -> None:
    c = client(MemoryStore())
    assert "approved by alice" not in c.get("/approvals?flash=approved%20by%20alice").text
    missing = c.get("/nowhere")
    assert missing.status_code == 404 and "toolproof inbox" in missing.text and "Nothing is at /nowhere" in missing.text
    c.get("/approvals")
    forged = c.post("/operator", data={"csrf": "forged", "name": "x"})
    assert forged.status_code == 403 and "CSRF check failed" in forged.text and "<header>" in forged.text
    bad = c.get("/audit?since=last%20tuesday")
    assert bad.status_code == 400 and "is not a time" in bad.text
    assert c.get("/audit/call/nope").status_code == 404 and c.get("/trail/nope").status_code == 404


def test_a_locked_store_answers_not_applied_and_nothing_changes(tmp_path: Path) -> None:
    path = tmp_path / "tp.sqlite3"
    store = SqliteStore(path)
    rid = gated(store)
    c = client(store)
    token = sign_in(c, "alice")
    store.set_busy_timeout(0.2)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        refused = c.post(f"/approvals/{rid}/approve", data={"csrf": token})
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert refused.status_code == 503 and "Not applied" in refused.text
    assert (store.approval_get(rid) or store).status == "pending"  # type: ignore[union-attr]
    store.close()


def test_url_credentials_and_long_amounts_are_shown_safely() -> None:
    store = MemoryStore()
    gated(store, {"amount_rs": 22_000, "callback": "https://user:hunter2@pay.example/x",
                  "dsn": "postgresql://app:s3cret@db:5432/app"})
    text = client(store).get("/approvals").text
    assert "hunter2" not in text and "s3cret" not in text and "pay.example" in text
    assert '<code class="num">22000</code> <span class="muted">(22,000)</span></span>' in text


def test_the_trail_links_the_asking_call_the_decision_and_the_executed_call() -> None:
    paid: list[int] = []
    store = MemoryStore()
    ctx = toolproof.CallContext(conversation_id="c-9", principal="buyer-1")
    args = {"amount_rs": 20_000, "to": "Kisan Co-op", "api_token": "t-0123456789ab"}
    with toolproof.Runner(payments(paid), store=store) as runner:
        asked = runner.call_sync("pay", args, context=ctx)
        c = client(store)
        token = sign_in(c, "alice")
        c.post(f"/approvals/{asked.meta.extra['approval_id']}/approve", data={"csrf": token})
        ran = runner.call_sync("pay", args, context=ctx)
        runner.flush()
    key = asked.error.idempotency_key if asked.error else None
    assert ran.ok and paid == [20_000] and key
    trail = c.get(f"/trail/{key}").text
    order = [trail.index(word) for word in ("approval requested", "approval pending", "approval approved", ">ok<")]
    assert order == sorted(order)  # in time order: asked, gated, decided, executed
    assert asked.meta.call_id in trail and ran.meta.call_id in trail and "by alice" in trail
    summary = c.get("/dashboard").text
    assert "1 ok, 0 failed, 1 waited for a person" in summary  # a gated call is not a failure


def test_the_tools_facts_stand_beside_a_request_and_a_high_risk_approval_asks_first() -> None:
    store = MemoryStore()
    rid = gated(store)
    text = client(store, tools=payments([])).get("/approvals").text
    assert 'data-testid="risk">high risk</span>' in text and ">write</span>" in text
    assert 'data-testid="description">Pay a supplier.</span>' in text
    assert f'action="/approvals/{rid}/approve" onsubmit="return confirm(' in text and "(high risk)" in text
    plain = client(store).get("/approvals").text  # without the toolset: the name alone, no confirmation
    assert 'data-testid="risk"' not in plain and f'action="/approvals/{rid}/approve" onsubmit' not in plain
