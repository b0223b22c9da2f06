"""The gateway's metrics after a scripted session against real upstreams over stdio (the misbehaving test
server, trusted and not): retries, journal replays, an open breaker and an unknown write outcome show up in
its own registry as that session produced them, and in the text a scrape returns."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.client.client import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.mcp_servers.harness import misbehaving
from toolproof import Envelope
from toolproof.mcp import META_CONVERSATION_ID, Gateway, GatewayConfig, NamingPolicy
from toolproof.orchestration.breaker import BreakerConfig
from toolproof.orchestration.policy import RetryPolicy
from toolproof.stores import MemoryStore

pytestmark = pytest.mark.timeout(120)
CONV: Any = {META_CONVERSATION_ID: "conv-metrics"}


async def test_a_scripted_session_is_counted_as_it_happened() -> None:
    config = GatewayConfig(upstreams=(misbehaving("odd"), misbehaving("good", trusted=True)),
                           naming=NamingPolicy(prefix="always"))
    gw = Gateway(config, store=MemoryStore(), retry=RetryPolicy(base_delay_s=0.01, max_delay_s=0.02),
                 breakers=BreakerConfig(failure_threshold=3, recovery_s=600))
    async with gw, Client(gw.create_server()) as client:
        async def call(tool: str, args: dict[str, Any]) -> Envelope:
            return Envelope.from_dict((await client.call_tool(tool, args, meta=CONV)).structured_content)

        first = await call("odd__echo", {"text": "hi"})       # untrusted: a journaled write
        again = await call("odd__echo", {"text": "hi"})       # the same call again: replayed from the journal
        crashed = await call("odd__crash", {})                # the process dies mid-write: outcome unknown
        flaky = await call("good__flaky_write", {"item": "x"})  # trusted idempotent write: 3 attempts, 503 each
        refused = await call("good__flaky_write", {"item": "y"})  # 3 failures opened the breaker: not sent
        scrape = gw.metrics.render().decode()
    assert first.ok and again.ok and again.meta.replayed
    assert crashed.error is not None and crashed.error.error_class.value == "outcome_unknown"
    assert flaky.error is not None and flaky.meta.attempts == 3
    assert refused.error is not None and refused.error.code == "CIRCUIT_OPEN"

    m = {(s.name, tuple(sorted(s.labels.items()))): s.value
         for f in text_string_to_metric_families(scrape) for s in f.samples}

    def v(name: str, **labels: str) -> float | None:
        return m.get((name, tuple(sorted(labels.items()))))

    assert v("toolproof_gateway_calls_total", upstream="odd", tool="odd__echo", outcome="ok") == 2
    assert v("toolproof_gateway_replays_total", upstream="odd", tool="odd__echo") == 1
    assert v("toolproof_gateway_errors_total", upstream="odd", tool="odd__crash", error_class="outcome_unknown",
             error_code=crashed.error.code) == 1
    assert v("toolproof_gateway_retries_total", upstream="good", tool="good__flaky_write") == 2
    assert v("toolproof_gateway_errors_total", upstream="good", tool="good__flaky_write",
             error_class="transient_upstream", error_code="CIRCUIT_OPEN") == 1
    assert v("toolproof_gateway_call_duration_seconds_count", upstream="good", tool="good__flaky_write") == 2
    assert v("toolproof_gateway_breaker_state", upstream="good", state="open") == 1
    assert v("toolproof_gateway_breaker_state", upstream="odd", state="closed") == 1
    assert v("toolproof_gateway_journal_unknown_outcomes") == 1
    assert v("toolproof_gateway_approvals_pending") == 0
    assert v("toolproof_gateway_drift_blocked_tools") == 0
    assert "conv-metrics" not in scrape and '"hi"' not in scrape  # no ids, no argument values


def test_two_gateways_never_share_counts() -> None:
    from toolproof.mcp._metrics import GatewayMetrics

    a, b = GatewayMetrics(), GatewayMetrics()
    a.observe("u", "t", Envelope.success(1, __import__("toolproof").Meta("t", "c1")), 0.01)
    assert a.registry.get_sample_value("toolproof_gateway_calls_total", {"upstream": "u", "tool": "t",
                                                                         "outcome": "ok"}) == 1
    assert b.registry.get_sample_value("toolproof_gateway_calls_total", {"upstream": "u", "tool": "t",
                                                                         "outcome": "ok"}) is None


def test_error_codes_are_bounded() -> None:
    from toolproof import ErrorInfo, Meta
    from toolproof.contract._errors import InternalError
    from toolproof.mcp._metrics import MAX_CODES, GatewayMetrics

    metrics = GatewayMetrics()
    for n in range(MAX_CODES + 50):
        error = ErrorInfo.from_exception(InternalError("x", code=f"CODE_{n}"))
        metrics.observe("u", "t", Envelope.failure(error, Meta("t", "c")), 0.001)
    codes = {s.labels["error_code"] for f in metrics.registry.collect() if f.name == "toolproof_gateway_errors"
             for s in f.samples if s.name.endswith("_total")}
    assert len(codes) == MAX_CODES + 1 and "OTHER" in codes
