"""Unknown outcomes settled by `verify=`: the tool's own check of the outside world, asked by the runner.

The outside world is a real SQLite file (the shop's `orders` table, keyed by the idempotency key the runner
gives the tool); the journal is a real SQLite file or the real PostgreSQL server. Every test counts the
shop's rows: one logical order must be one row, whatever the faults. The handlers sleep for real, since the
point is a real thread still running after its time limit.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest

import toolproof
from tests.pg_support import schema_url
from toolproof import NOT_DONE, CallContext, Runner, Toolset
from toolproof.stores import PostgresStore, SqliteStore, Store

ORDER = {"sku": "A-1", "qty": 2}


class Shop:
    """The system the tool writes to, with the faults a test asks for, in the order the body meets them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS orders (key TEXT PRIMARY KEY, sku TEXT, qty INTEGER)")
        self.before_s = 0.0  # sleep before the insert (a slow network on the way there)
        self.commit = True  # whether the insert happens at all (False: the request never arrived)
        self.after_s = 0.0  # sleep after the commit (the reply is slow, or lost)
        self.verify_raises = False
        self.verify_calls = 0

    def rows(self) -> list[tuple[str, str, int]]:
        with sqlite3.connect(self.path) as db:
            return list(db.execute("SELECT key, sku, qty FROM orders"))

    def place(self, key: str, sku: str, qty: int) -> dict[str, Any]:
        time.sleep(self.before_s)
        if self.commit:
            with sqlite3.connect(self.path) as db:
                db.execute("INSERT INTO orders VALUES (?, ?, ?)", (key, sku, qty))
        time.sleep(self.after_s)
        return {"order": key[:12], "sku": sku, "qty": qty}

    def find(self, key: str) -> dict[str, Any] | object:
        self.verify_calls += 1
        if self.verify_raises:
            raise ConnectionError("shop API down (token=tok-SECRET-1)")
        with sqlite3.connect(self.path) as db:
            row = db.execute("SELECT sku, qty FROM orders WHERE key = ?", (key,)).fetchone()
        return NOT_DONE if row is None else {"order": key[:12], "sku": row[0], "qty": row[1]}


def toolset(shop: Shop, *, timeout_s: float = 0.2) -> Toolset:
    def find_order(sku: str, qty: int, ctx: CallContext) -> Any:
        assert ctx.idempotency_key is not None
        return shop.find(ctx.idempotency_key)

    @toolproof.tool(effect="write", timeout_s=timeout_s, verify=find_order)
    def place_order(sku: str, qty: int, ctx: CallContext) -> dict[str, Any]:
        """Place an order for a SKU. Use it to buy; not to look up an order. Returns the order.

        Args:
            sku: The product's SKU.
            qty: How many.
        """
        assert ctx.idempotency_key is not None
        return shop.place(ctx.idempotency_key, sku, qty)

    return Toolset([place_order])


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with schema_url() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'journal.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url


def open_url(url: str) -> Store:
    return SqliteStore(url.removeprefix("sqlite:///")) if url.startswith("sqlite") else PostgresStore(url, max_size=2)


@pytest.fixture
def buyer() -> CallContext:
    """A conversation of its own per test: the PostgreSQL journal is shared by the module's tests."""
    return CallContext(conversation_id=f"conv-{uuid.uuid4().hex[:8]}", principal="alice")


@pytest.fixture
def shop(tmp_path: Path) -> Shop:
    return Shop(tmp_path / "shop.db")


def runner_for(shop: Shop, url: str, **options: Any) -> Runner:
    return Runner(toolset(shop), store=open_url(url), **options)


def entry_status(runner: Runner, key: str) -> str:
    found = runner.store.journal_get(key)
    assert found is not None
    return found.status


def test_commit_then_timeout_answers_ok_once_and_a_resend_replays(shop: Shop, store_url: str,
                                                            buyer: CallContext) -> None:
    shop.after_s = 0.35  # commits at once, answers after its 0.2 s limit
    with runner_for(shop, store_url) as runner:
        first = runner.call_sync("place_order", ORDER, context=buyer)
        assert first.ok, first.to_dict()
        assert first.result == {"order": first.meta.idempotency_key[:12], "sku": "A-1", "qty": 2}
        assert first.meta.extra["verified"]["said"] == "done"
        assert first.meta.extra["verified"]["after"] == "TIMEOUT_AFTER_DISPATCH"
        assert entry_status(runner, first.meta.idempotency_key) == "done"
        again = runner.call_sync("place_order", ORDER, context=buyer)
        assert again.ok and again.meta.replayed and again.result == first.result
    assert len(shop.rows()) == 1


def test_timeout_before_the_commit_with_not_done_runs_the_write_again_once(shop: Shop, store_url: str,
                                                            buyer: CallContext) -> None:
    shop.before_s, shop.commit = 0.3, False  # the first attempt never commits, and ends on its own
    with runner_for(shop, store_url) as runner:
        calls = {"n": 0}
        original = shop.place

        def place(key: str, sku: str, qty: int) -> dict[str, Any]:
            calls["n"] += 1
            if calls["n"] == 2:  # the second attempt goes through at once
                shop.before_s, shop.commit = 0.0, True
            return original(key, sku, qty)

        shop.place = place  # type: ignore[method-assign]
        envelope = runner.call_sync("place_order", ORDER, context=buyer)
        assert envelope.ok, envelope.to_dict()
        assert envelope.meta.attempts == 2
        assert entry_status(runner, envelope.meta.idempotency_key) == "done"
    assert calls["n"] == 2
    assert len(shop.rows()) == 1


def test_a_handler_still_running_when_verify_says_not_done_is_not_raced(shop: Shop, tmp_path: Path,
                                                            buyer: CallContext) -> None:
    shop.before_s = 1.2  # commits long after its limit and after verify's wait
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    with runner_for(shop, url, lease_s=2.0) as runner:
        first = runner.call_sync("place_order", ORDER, context=buyer)
        assert not first.ok and first.error is not None
        assert first.error.error_class.value == "outcome_unknown"
        assert first.error.state is not None and first.error.state["verify"]["said"] == "unknown"
        assert "still running" in first.error.state["verify"]["evidence"]
        key = first.meta.idempotency_key or first.error.idempotency_key
        assert key is not None
        resent = runner.call_sync("place_order", ORDER, context=buyer)  # the first attempt is still running: not asked
        assert not resent.ok and resent.error is not None and resent.error.error_class.value == "outcome_unknown"
        assert "may still be running" in resent.error.state["verify"]["evidence"]  # type: ignore[index]
        time.sleep(2.1)  # the handler has committed, and the lease has ended
        settled = runner.call_sync("place_order", ORDER, context=buyer)
        assert settled.ok, settled.to_dict()
        assert settled.meta.extra["verified"]["said"] == "done"
        assert entry_status(runner, key) == "done"
        stops = runner.store.stops_for_key(key)
        assert stops and all(s.resolved_at is not None for s in stops)
    assert len(shop.rows()) == 1


def test_a_verify_that_raises_leaves_outcome_unknown_with_the_key(shop: Shop, store_url: str,
                                                            buyer: CallContext) -> None:
    shop.after_s, shop.verify_raises = 0.3, True
    with runner_for(shop, store_url) as runner:
        envelope = runner.call_sync("place_order", ORDER, context=buyer)
        assert not envelope.ok and envelope.error is not None
        assert envelope.error.error_class.value == "outcome_unknown"
        key = envelope.error.idempotency_key
        assert key is not None and entry_status(runner, key) == "unknown"
        said = envelope.error.state["verify"]  # type: ignore[index]
        assert said["said"] == "unknown" and "ConnectionError" in said["evidence"]
        stop = runner.store.get_stop(envelope.meta.extra["stop_id"])
        assert stop is not None and stop.extra["verify"]["said"] == "unknown"
    assert len(shop.rows()) == 1


def test_verify_sees_the_call_secrets_redacted_from_its_evidence(tmp_path: Path, buyer: CallContext) -> None:
    def check(token: Annotated[str, toolproof.Secret]) -> Any:
        raise RuntimeError(f"cannot reach the API with {token}")

    @toolproof.tool(effect="write", timeout_s=0.1, verify=check)
    def send(token: Annotated[str, toolproof.Secret]) -> str:
        """Send a payment with a token. Use it to pay; not to check. Returns the payment id."""
        time.sleep(0.15)
        return "p-1"

    with Runner(Toolset([send]), store=SqliteStore(tmp_path / "j.db")) as runner:
        envelope = runner.call_sync("send", {"token": "sk-live-TOPSECRET"}, context=buyer)
        assert envelope.error is not None
        assert "sk-live-TOPSECRET" not in json.dumps(envelope.to_dict())
        stop = runner.store.get_stop(envelope.meta.extra["stop_id"])
        assert stop is not None and "sk-live-TOPSECRET" not in repr(stop)


def test_the_async_path_settles_by_verify_too(shop: Shop, tmp_path: Path,
                                                            buyer: CallContext) -> None:
    shop.after_s = 0.3

    async def main() -> tuple[toolproof.Envelope, toolproof.Envelope]:
        async with Runner(toolset(shop), store=SqliteStore(tmp_path / "j.db")) as runner:
            first = await runner.call("place_order", ORDER, context=buyer)
            return first, await runner.call("place_order", ORDER, context=buyer)

    first, again = asyncio.run(main())
    assert first.ok and first.meta.extra["verified"]["said"] == "done"
    assert again.ok and again.meta.replayed
    assert len(shop.rows()) == 1


WORKER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from pathlib import Path
    from tests.pipeline.test_verify import Shop, toolset, open_url, ORDER
    from toolproof import CallContext, Runner
    shop = Shop(Path({shop!r}))
    shop.after_s = 60  # commits, then hangs until killed
    runner = Runner(toolset(shop, timeout_s=120), store=open_url({url!r}), lease_s=1.0)
    print("calling", flush=True)
    buyer = CallContext(conversation_id={conversation!r}, principal="alice")
    runner.call_sync("place_order", ORDER, context=buyer)
""")


def test_a_sigkilled_workers_entry_is_settled_by_the_next_process_verify(shop: Shop, store_url: str,
                                                            buyer: CallContext) -> None:
    root = str(Path(__file__).resolve().parents[2])
    script = WORKER.format(tests=root, shop=str(shop.path), url=store_url, conversation=buyer.conversation_id)
    path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
    worker = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": path})
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "calling"
        deadline = time.monotonic() + 30
        while not shop.rows():
            assert time.monotonic() < deadline, "the worker never committed"
            time.sleep(0.05)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    assert worker.returncode == -signal.SIGKILL
    time.sleep(1.1)  # its 1 s lease ends
    with runner_for(shop, store_url, lease_s=1.0) as runner:
        envelope = runner.call_sync("place_order", ORDER, context=buyer)
        assert envelope.ok, envelope.to_dict()
        assert envelope.meta.extra["verified"]["said"] == "done"
        key = envelope.meta.idempotency_key
        assert key is not None and entry_status(runner, key) == "done"
        stops = runner.store.stops_for_key(key)
        assert [s.code for s in stops] == ["WORKER_LOST"] and stops[0].resolved_at is not None
        assert "verified" in (stops[0].resolution or "")
    assert len(shop.rows()) == 1


def test_a_verify_that_hangs_is_cannot_tell_within_the_tools_time_limit(shop: Shop, tmp_path: Path,
                                                                        buyer: CallContext) -> None:
    shop.after_s = 0.3
    original = shop.find

    def hang(key: str) -> Any:
        time.sleep(5)
        return original(key)

    shop.find = hang  # type: ignore[method-assign]
    with runner_for(shop, f"sqlite:///{tmp_path / 'j.db'}") as runner:
        started = time.monotonic()
        envelope = runner.call_sync("place_order", ORDER, context=buyer)
        took = time.monotonic() - started
        assert envelope.error is not None and envelope.error.error_class.value == "outcome_unknown"
        assert "did not answer within" in envelope.error.state["verify"]["evidence"]  # type: ignore[index]
    assert took < 3  # the 0.2 s limit, the attempt's 0.3 s, the verify's 0.2 s: never the hook's 5 s


def test_an_interrupt_in_verify_leaves_no_write_in_flight(shop: Shop, tmp_path: Path, buyer: CallContext) -> None:
    shop.after_s = 0.3

    def interrupted(key: str) -> Any:
        raise KeyboardInterrupt

    shop.find = interrupted  # type: ignore[method-assign]
    toolproof_tools = toolset(shop, timeout_s=0.2)
    (tool,) = toolproof_tools
    with Runner(Toolset([tool]), store=SqliteStore(tmp_path / "j.db")) as runner:
        with pytest.raises(KeyboardInterrupt):
            runner.call_sync("place_order", ORDER, context=buyer)
        (entry,) = runner.store.journal_list()
        assert entry.status == "unknown"
        assert runner.journal.keeper is not None and runner.journal.keeper.held() == 0


def test_a_read_cannot_have_a_verify() -> None:
    with pytest.raises(toolproof.DefinitionError, match="verify"):
        @toolproof.tool(effect="read", verify=lambda: None)
        def peek() -> str:
            """Peek at the shop. Use it to look; not to buy. Returns a word."""
            return "ok"
