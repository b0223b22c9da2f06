"""Chaos against a real HTTP service on loopback: 429 with Retry-After, 503, slow answers and hangs at random.

The service is a real `http.server` started by the test; the tools call it with `urllib` over TCP. Every
call must end in an envelope (and, when the orchestrator gives up, a stop record) within its budgets; the
breaker must open during an outage and close once the service is back; nothing may loop, and a write that
may not be repeated reaches the service at most once per call.
"""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from toolproof import CallContext, Runner, Tool, Toolset
from toolproof.contract._classify import classify_http
from toolproof.orchestration.breaker import BreakerConfig, BreakerState
from toolproof.orchestration.guard import LoopGuard
from toolproof.orchestration.policy import RetryPolicy, RunBudget

TIMEOUT_S = 0.3
WALL_S = 1.2
SLACK_S = 0.25  # thread scheduling on a shared 2-core machine; the property test holds the 50 ms bound


class Chaos:
    """What the service does next: `mode` is "chaos", "outage" or "healthy"."""

    def __init__(self, seed: int) -> None:
        self.mode = "chaos"
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.posts: Counter[str] = Counter()

    def pick(self) -> str:
        if self.mode == "outage":
            return "503"
        if self.mode == "healthy":
            return "ok"
        with self.lock:
            return self.rng.choices(["ok", "429", "503", "slow", "hang"], weights=[45, 15, 20, 12, 8])[0]


def make_handler(chaos: Chaos) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _answer(self) -> None:
            request_id = self.headers.get("X-Request-Id", "")
            what = chaos.pick()
            with chaos.lock:
                chaos.requests[request_id] += 1
                if self.command == "POST" and what != "429":  # a 429 refuses before acting: not an effect
                    chaos.posts[request_id] += 1
            try:
                if what == "hang":
                    time.sleep(3)
                    return
                if what == "slow":
                    time.sleep(0.1)
                if what == "429":
                    self._send(429, {"detail": "slow down"}, {"Retry-After": "0"})
                elif what == "503":
                    self._send(503, {"detail": "warming up"})
                else:
                    self._send(200, {"price_rs_per_kg": 41.5, "request_id": request_id})
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting: that is the point of the test

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        do_GET = _answer
        do_POST = _answer

    return Handler


@pytest.fixture
def service() -> Iterator[tuple[str, Chaos]]:
    chaos = Chaos(seed=20261129)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(chaos))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", chaos
    server.shutdown()
    server.server_close()


def http_tools(base: str) -> Toolset:
    def request(method: str, path: str, ctx: CallContext) -> Any:
        req = urllib.request.Request(base + path, method=method, data=b"{}" if method == "POST" else None,
                                     headers={"X-Request-Id": ctx.call_id or ""})
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise classify_http(exc.code, exc.headers.items(), exc.read()) from None
        except urllib.error.URLError as exc:
            raise exc.reason if isinstance(exc.reason, BaseException) else ConnectionError(str(exc)) from None

    schema = {"type": "object", "properties": {"crop": {"type": "string"}}, "required": ["crop"],
              "additionalProperties": False}
    get_price = Tool.from_schema("get_today_price", "Get today's price.", schema,
                                 lambda args, ctx: request("GET", "/price", ctx), effect="read",
                                 timeout_s=TIMEOUT_S + 0.1, upstream="mandi")
    send_order = Tool.from_schema("send_order", "Send one order.", schema,
                                  lambda args, ctx: request("POST", "/orders", ctx), effect="write",
                                  idempotent=False, timeout_s=TIMEOUT_S + 0.1, upstream="orders")
    return Toolset([get_price, send_order])


def test_chaos(service: tuple[str, Chaos]) -> None:
    base, chaos = service
    runner = Runner(
        http_tools(base),
        retry=RetryPolicy(max_attempts=3, base_delay_s=0.02, max_delay_s=0.2, max_wall_s=WALL_S),
        breakers=BreakerConfig(failure_threshold=8, recovery_s=0.3),
        budget=RunBudget(max_retries=500, max_wall_s=120),
        rng=random.Random(7).random,
        loop_guard=LoopGuard(max_tool_failures=10_000),  # the guard has its own tests; here: the service
    )
    envelopes = []

    def call(tool: str, i: int) -> None:
        start = time.monotonic()
        args = {"crop": f"onion-{i}"}  # distinct calls: identical repeats of a failure are the loop guard's
        env = runner.call_sync(tool, args, context=CallContext(run_id="chaos", conversation_id=f"c{i}"))
        elapsed = time.monotonic() - start
        assert elapsed <= WALL_S + SLACK_S, (tool, elapsed, env)
        envelopes.append(env)

    # 1. Chaos: a mix of everything, reads and writes.
    for i in range(40):
        call("get_today_price" if i % 3 else "send_order", i)
    # 1b. The same, from four agents at once (one runner, shared breakers, bucket and budgets).
    workers = [threading.Thread(target=lambda k=k: [call("get_today_price", 1000 + 10 * k + j) for j in range(6)])
               for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(envelopes) == 40 + 24  # every call came back with an envelope (an assert in a thread would not)
    # 2. Outage: the breaker must open and refuse without sending.
    chaos.mode = "outage"
    sent_before = sum(chaos.requests.values())
    for i in range(8):
        call("get_today_price", 100 + i)
    breaker = runner.breaker("mandi")
    assert breaker is not None and breaker.opened_count >= 1
    assert sum(chaos.requests.values()) - sent_before < 8 * 3  # refused calls were not sent
    # 3. Back to healthy: after the recovery window, one trial closes the breaker.
    chaos.mode = "healthy"
    time.sleep(0.45)
    call("get_today_price", 200)
    assert breaker.state is BreakerState.CLOSED
    assert envelopes[-1].ok
    runner.close()

    # Every call ended in an envelope; every give-up has its stop record.
    stops = {s.id: s for s in runner.store.list_stops(limit=10_000)}
    for env in envelopes:
        assert env.meta.attempts <= 3
        if not env.ok:
            assert env.error is not None
            if env.error.next_action == "escalate":
                assert env.meta.extra["stop_id"] in stops
    codes = Counter(env.error.code for env in envelopes if env.error is not None)
    assert codes["CIRCUIT_OPEN"] >= 1
    # Nothing looped; the write reached the service at most once per call (a 429 refused it before acting, so it
    # was sent again under its key; a 503, a hang or a slow answer may have acted, so it never was).
    assert max(chaos.requests.values()) <= 3
    assert max(chaos.posts.values(), default=0) <= 1
    # The audit trail has every attempt that was sent.
    records = runner.store.list_audit(limit=10_000)
    seen = Counter(r.code for r in records)
    assert seen["HTTP_503"] and seen["HTTP_429"] and seen["TIMEOUT"] + seen["TIMEOUT_AFTER_DISPATCH"], seen
    dispatched = sum(1 for r in records if r.outcome in ("ok", "error"))
    assert dispatched == sum(env.meta.attempts for env in envelopes if env.meta.extra.get("fallback_from") is None)
