"""The inbox in a real browser: an agent run waits for approval, a person clicks, the order is placed once."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

import toolproof
from tests.approvals._tools import gated_wholesaler, payments
from tests.conftest import TODAY
from tests.inbox.conftest import SHOTS, free_port, serve
from tests.pipeline.test_verify import ORDER as VERIFY_ORDER
from tests.pipeline.test_verify import Shop as VerifyShop
from tests.pipeline.test_verify import toolset as verify_toolset
from toolproof.contract._errors import ToolTimeout
from toolproof.examples.wholesaler import Shop

pytestmark = pytest.mark.e2e

ORDER = {"crop": "onion", "quantity_kg": 1500, "delivery_date": "2026-10-22"}
BUYER = toolproof.CallContext(conversation_id="chat-42", principal="B-17")


def agent(shop: Shop, store_url: str) -> toolproof.Runner:
    return toolproof.Runner(gated_wholesaler(shop), store=store_url)


def sign_in(page: Any, base: str, name: str) -> None:
    page.goto(base + "/approvals")
    page.fill("input[name=name]", name)
    page.click("button[aria-label=sign]")
    assert page.locator(".who").inner_text() == f"operator: {name}"


def shot(page: Any, name: str, store_url: str) -> None:
    if store_url.startswith("sqlite"):  # one set of pictures for the docs
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 1000, path  # a real picture of the page


def test_approve_in_the_browser_and_the_order_is_placed_once(inbox: str, store_url: str, browser: Any,
                                                             tmp_path: Path) -> None:
    shop = Shop(tmp_path / "orders.sqlite3", today=lambda: TODAY)
    with agent(shop, store_url) as runner:
        waiting = runner.call_sync("place_order", ORDER, context=BUYER)
        assert waiting.error is not None and waiting.error.code == "APPROVAL_REQUIRED"
        request_id = waiting.meta.extra["approval_id"]
        page = browser.new_page()
        sign_in(page, inbox, "alice")
        row = page.locator("[data-testid=pending] tr", has_text=request_id)
        assert "1500" in row.inner_text() and "above the 1000 kg" in row.inner_text()
        shot(page, "approvals", store_url)
        page.click(f"button[aria-label='approve {request_id}']")
        assert f"{request_id}: approved by alice" in page.locator(".flash").inner_text()
        assert shop.count_orders() == 0  # approving does not run it: the agent's same call does
        placed = runner.call_sync("place_order", ORDER, context=BUYER)
        assert placed.ok and runner.call_sync("place_order", ORDER, context=BUYER).meta.replayed
        page.close()
    assert shop.count_orders() == 1
    shop.close()


def test_deny_in_the_browser_and_the_agent_is_told(inbox: str, store_url: str, browser: Any, tmp_path: Path) -> None:
    shop = Shop(tmp_path / "orders.sqlite3", today=lambda: TODAY)
    with agent(shop, store_url) as runner:
        request_id = runner.call_sync("place_order", ORDER, context=BUYER).meta.extra["approval_id"]
        page = browser.new_page()
        sign_in(page, inbox, "bob")
        page.fill(f"form[action='/approvals/{request_id}/deny'] input[name=note]", "buyer's credit is on hold")
        page.click(f"button[aria-label='deny {request_id}']")
        assert "denied by bob" in page.locator(".flash").inner_text()
        refused = runner.call_sync("place_order", ORDER, context=BUYER)
        assert refused.error is not None and refused.error.code == "APPROVAL_DENIED"
        assert "bob denied" in refused.error.message and "credit is on hold" in refused.error.message
        page.close()
    assert shop.count_orders() == 0
    shop.close()


def test_two_operators_approving_at_once_apply_one_decision(inbox: str, store_url: str, browser: Any,
                                                            tmp_path: Path) -> None:
    shop = Shop(tmp_path / "orders.sqlite3", today=lambda: TODAY)
    with agent(shop, store_url) as runner:
        request_id = runner.call_sync("place_order", ORDER, context=BUYER).meta.extra["approval_id"]
        first, second = browser.new_context(), browser.new_context()
        pages = [first.new_page(), second.new_page()]
        for page, name in zip(pages, ("alice", "bob"), strict=True):
            sign_in(page, inbox, name)
        for page in pages:
            page.click(f"button[aria-label='approve {request_id}']")
        texts = [page.locator(".flash").inner_text() for page in pages]
        assert f"{request_id}: approved by alice" in texts[0]
        assert "Not applied" in texts[1] and "already approved by alice" in texts[1]
        results: list[toolproof.Envelope] = []
        calls = [threading.Thread(target=lambda: results.append(runner.call_sync("place_order", ORDER,
                                                                                 context=BUYER))) for _ in range(3)]
        for t in calls:
            t.start()
        for t in calls:
            t.join()
        assert all(r.ok for r in results), results
        first.close()
        second.close()
    assert shop.count_orders() == 1
    shop.close()


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_reconcile_an_unknown_outcome_and_read_the_audit(inbox: str, store_url: str, browser: Any) -> None:
    wires: list[int] = []

    @toolproof.tool(effect="write", risk="high")
    def send_wire(amount_rs: int) -> dict[str, int]:
        """Send a bank wire.

        Use it when asked to pay by wire. Returns the wire.
        """
        wires.append(amount_rs)
        raise ToolTimeout("The bank did not answer in time.")

    with toolproof.Runner(toolproof.Toolset([send_wire]), store=store_url) as runner:
        lost = runner.call_sync("send_wire", {"amount_rs": 900}, context=BUYER)
        assert lost.error is not None and lost.error.error_class.value == "outcome_unknown"
        runner.call_sync("send_wire", {"amount_rs": "lots"}, context=BUYER)  # one validation failure to chart
        runner.flush()
        key = lost.error.idempotency_key
        page = browser.new_page()
        sign_in(page, inbox, "carol")
        page.goto(inbox + "/stops")
        assert key in page.locator("[data-testid=unknown]").inner_text()
        shot(page, "stops", store_url)
        page.fill(f"form[action='/journal/{key}/reconcile'] input[name=evidence]", '{"wire_id": "W-1"}')
        page.click(f"button[aria-label='done {key}']")
        assert "reconciled as done" in page.locator(".flash").inner_text()
        assert page.locator("[data-testid=unknown-empty]").count() == 1
        assert page.locator("[data-testid=stops-empty]").count() == 1  # the linked stop was resolved too
        replay = runner.call_sync("send_wire", {"amount_rs": 900}, context=BUYER)
        assert replay.ok and replay.result == {"wire_id": "W-1"} and wires == [900]
        page.goto(inbox + "/audit?tool=send_wire")
        assert "reconciled" in page.locator("[data-testid=audit]").inner_text()
        shot(page, "audit", store_url)
        page.click("[data-testid=audit] td:nth-child(2) a >> nth=-1")  # the oldest row's call
        assert "attempt" in page.locator("main").inner_text()
        page.click("[data-testid=trail-link] >> nth=0")  # its operation, from the ask to the reconciliation
        trail = page.locator("[data-testid=trail]").inner_text()
        assert "error" in trail and "stopped (outcome_unknown)" in trail and "reconciled" in trail
        shot(page, "trail", store_url)
        page.goto(inbox + "/dashboard")
        assert page.locator("svg[aria-label='calls and failures per tool']").count() == 1
        assert "amount_rs" in page.locator("[data-testid=fields]").inner_text()
        shot(page, "dashboard", store_url)
        page.close()


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_cookie_set_by_another_local_port_cannot_change_who_decided(inbox: str, store_url: str, browser: Any,
                                                                      tmp_path: Path) -> None:
    """Cookies do not keep ports apart: a page on another port of 127.0.0.1 sets `toolproof_operator=mallory`.
    The inbox signs the names it hands out, so that cookie signs nobody in and decides nothing."""
    port = free_port()
    server = HTTPServer(("127.0.0.1", port), _Mallory)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    shop = Shop(tmp_path / "orders.sqlite3", today=lambda: TODAY)
    try:
        with agent(shop, store_url) as runner:
            request_id = runner.call_sync("place_order", ORDER, context=BUYER).meta.extra["approval_id"]
            context = browser.new_context()
            page = context.new_page()
            sign_in(page, inbox, "alice")
            page.goto(f"http://127.0.0.1:{port}/")  # another local port's page
            assert any(c["value"] == "mallory" for c in context.cookies())
            page.goto(inbox + "/approvals")
            assert page.locator(".who").inner_text() == "operator: —"
            page.click(f"button[aria-label='approve {request_id}']")
            assert "sign with your name first" in page.locator(".flash").inner_text()
            page.reload()
            assert page.locator(".flash").count() == 0  # shown once; a reload resubmits nothing
            request = runner.store.approval_get(request_id)
            assert request is not None and request.status == "pending" and request.decided_by is None
            context.close()
    finally:
        server.shutdown()
        shop.close()


class _Mallory(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Set-Cookie", "toolproof_operator=mallory; Path=/")
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<p>nothing to see</p>")

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_high_risk_approvals_ask_first_with_the_tools_facts_on_screen(store_url: str, browser: Any) -> None:
    paid: list[int] = []
    proc, base = serve(store_url, "--tools", "tests.inbox._toolset:payments_desk")
    asked: list[str] = []
    try:
        with toolproof.Runner(payments(paid), store=store_url) as runner:
            ids = [runner.call_sync("pay", {"amount_rs": a, "to": "Kisan Co-op", "api_token": "t-0123456789ab"},
                                    context=BUYER).meta.extra["approval_id"] for a in (20_000, 30_000)]
            page = browser.new_page()
            sign_in(page, base, "alice")
            row = page.locator("[data-testid=pending] > tbody > tr", has_text=ids[0])
            assert "high risk" in row.locator("[data-testid=risk]").inner_text()
            assert row.locator("[data-testid=description]").inner_text() == "Pay a supplier."
            page.on("dialog", lambda d: (asked.append(d.message), d.dismiss()))
            for rid in ids:
                page.check(f"input[aria-label='select {rid}']")
            page.click("button[aria-label='approve selected']")  # dismissed: nothing is approved
            assert "2 request(s) at once, 2 of them high-risk" in asked[-1]
            assert [getattr(runner.store.approval_get(i), "status", None) for i in ids] == ["pending", "pending"]
            page.close()
            page = browser.new_page()
            sign_in(page, base, "alice")
            page.on("dialog", lambda d: (asked.append(d.message), d.accept()))
            page.click(f"button[aria-label='approve {ids[0]}']")
            assert "pay (high risk)" in asked[-1]
            assert f"{ids[0]}: approved by alice" in page.locator(".flash").inner_text()
            assert runner.call_sync("pay", {"amount_rs": 20_000, "to": "Kisan Co-op", "api_token": "t-0123456789ab"},
                                    context=BUYER).ok
            page.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert paid == [20_000]


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_change_right_after_load_is_shown_and_ticked_boxes_survive_it(inbox: str, store_url: str, browser: Any,
                                                                       tmp_path: Path) -> None:
    """The page carries the version it was rendered from: a request added in its first second is seen at the
    next poll (the page reloads); with a box ticked, the page offers the reload instead of taking the tick."""
    shop = Shop(tmp_path / "orders.sqlite3", today=lambda: TODAY)
    with agent(shop, store_url) as runner:
        def ask(n: int) -> str:
            order = {**ORDER, "quantity_kg": 1500 + n}
            return str(runner.call_sync("place_order", order, context=BUYER).meta.extra["approval_id"])

        first = ask(0)
        page = browser.new_page()
        sign_in(page, inbox, "dana")
        second = ask(1)  # right after the page loaded
        page.locator("[data-testid=pending] > tbody > tr", has_text=second).wait_for(timeout=15_000)
        page.check(f"input[aria-label='select {first}']")
        third = ask(2)
        page.locator("#changed").wait_for(state="visible", timeout=15_000)
        assert page.is_checked(f"input[aria-label='select {first}']")  # not reloaded under the operator's tick
        assert page.locator("[data-testid=pending] > tbody > tr", has_text=third).count() == 0
        page.click("#changed button")
        page.locator("[data-testid=pending] > tbody > tr", has_text=third).wait_for(timeout=15_000)
        page.close()
    shop.close()


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_verify_an_unknown_outcome_in_the_browser(store_url: str, browser: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An order whose reply timed out (verify could not tell then) is verified from the page, by the inbox's
    own copy of the toolset reading the shop's real SQLite file: settled as done, the resend replays it."""
    shop = VerifyShop(tmp_path / "shop.db")
    shop.after_s, shop.verify_raises = 0.3, True
    monkeypatch.setenv("VERIFY_SHOP", str(shop.path))  # where the inbox's toolset finds the shop
    proc, base = serve(store_url, "--toolset", "tests.cli.verify_shop:tools")
    try:
        with toolproof.Runner(verify_toolset(shop), store=store_url, lease_s=0.5) as runner:
            lost = runner.call_sync("place_order", VERIFY_ORDER, context=BUYER)
            assert lost.error is not None and lost.error.idempotency_key
            key = lost.error.idempotency_key
            time.sleep(0.6)  # the attempt has ended, and so has its lease
            page = browser.new_page()
            sign_in(page, base, "erin")
            page.goto(base + "/stops")
            row = page.locator("[data-testid=unknown] > tbody > tr", has_text=key)
            assert row.locator("[data-testid=verify-available]").inner_text() == "verify available"
            assert "last said: cannot tell" in row.locator("[data-testid=verify-said]").inner_text()
            shot(page, "unknown", store_url)
            page.click(f"button[aria-label='verify {key}']")
            said = page.locator(".flash").inner_text()
            assert f"{key}: verify said done (verify found the effect); settled as done" in said
            assert page.locator("[data-testid=unknown-empty]").count() == 1
            page.reload()
            assert page.locator(".flash").count() == 0  # POST-redirect-GET: a reload asks nothing again
            shop.verify_raises = False
            replay = runner.call_sync("place_order", VERIFY_ORDER, context=BUYER)
            assert replay.ok and replay.meta.replayed and replay.result["sku"] == "A-1"
            page.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert len(shop.rows()) == 1
