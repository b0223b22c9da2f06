"""The ready-made verify hooks, through a real Runner: a real SQLite file holding the shop's rows, and a real
HTTP server on loopback answering lookups by idempotency key (200, 404 or 500 as a test sets it)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import toolproof
from toolproof import NOT_DONE, CallContext, Runner, Toolset, verify_by_http, verify_by_sql

BUYER = CallContext(conversation_id="conv-v", principal="alice")


def slow_order(verify: Any, effect: Any) -> Toolset:
    @toolproof.tool(effect="write", timeout_s=0.2, verify=verify)
    def place_order(qty: int, ctx: CallContext) -> dict[str, Any]:
        """Place an order. Use it to buy; not to look one up. Returns the order."""
        effect(ctx.idempotency_key, qty)
        time.sleep(0.3)  # the reply comes after the time limit: the outcome is unknown until verified
        return {"key": ctx.idempotency_key, "qty": qty}

    return Toolset([place_order])


def test_verify_by_sql_finds_the_row_and_answers_with_it(tmp_path: Path) -> None:
    shop = tmp_path / "shop.db"
    with sqlite3.connect(shop) as db:
        db.execute("CREATE TABLE orders (key TEXT PRIMARY KEY, qty INTEGER)")

    def insert(key: str, qty: int) -> None:
        with sqlite3.connect(shop) as db:
            db.execute("INSERT INTO orders VALUES (?, ?)", (key, qty))

    hook = verify_by_sql(lambda: sqlite3.connect(shop), "SELECT key, qty FROM orders WHERE key = ?")
    with Runner(slow_order(hook, insert), store=f"sqlite:///{tmp_path / 'j.db'}") as runner:
        envelope = runner.call_sync("place_order", {"qty": 3}, context=BUYER)
    assert envelope.ok, envelope.to_dict()
    assert envelope.result == {"key": envelope.meta.idempotency_key, "qty": 3}
    assert envelope.meta.extra["verified"]["said"] == "done"


def test_verify_by_sql_says_not_done_without_a_row(tmp_path: Path) -> None:
    shop = tmp_path / "shop.db"
    with sqlite3.connect(shop) as db:
        db.execute("CREATE TABLE orders (key TEXT PRIMARY KEY, qty INTEGER)")
    hook = verify_by_sql(lambda: sqlite3.connect(shop), "SELECT key, qty FROM orders WHERE key = ?")
    assert hook(qty=1, ctx=CallContext(idempotency_key="tp1_x")) is NOT_DONE
    with pytest.raises(LookupError, match="CallContext"):
        hook(qty=1)


class Lookups(BaseHTTPRequestHandler):
    orders: dict[str, Any] = {}
    status = 200

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        key = self.path.rsplit("/", 1)[-1]
        code = self.status if self.status != 200 else (200 if key in self.orders else 404)
        body = json.dumps(self.orders.get(key, {"detail": "no such order"})).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def api() -> Iterator[tuple[str, type[Lookups]]]:
    handler = type("Handler", (Lookups,), {"orders": {}, "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/orders/{{key}}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_verify_by_http_done_not_done_and_cannot_tell(api: tuple[str, type[Lookups]], tmp_path: Path) -> None:
    url, handler = api

    def record(key: str, qty: int) -> None:
        handler.orders[key] = {"key": key, "qty": qty}

    with Runner(slow_order(verify_by_http(url), record), store=f"sqlite:///{tmp_path / 'j.db'}") as runner:
        done = runner.call_sync("place_order", {"qty": 5}, context=BUYER)
        assert done.ok and done.result == {"key": done.meta.idempotency_key, "qty": 5}
        assert done.meta.extra["verified"]["said"] == "done"
        handler.status = 500
        broken = runner.call_sync("place_order", {"qty": 6}, context=BUYER)
        assert broken.error is not None and broken.error.error_class.value == "outcome_unknown"
        assert "HTTPError" in broken.error.state["verify"]["evidence"]  # type: ignore[index]
    handler.status = 200
    hook = verify_by_http(url)
    assert hook(CallContext(idempotency_key="tp1_missing/../x")) is NOT_DONE  # the key is quoted, not a path
    with pytest.raises(ValueError, match="key"):
        verify_by_http("http://127.0.0.1/orders")
