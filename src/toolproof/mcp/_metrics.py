"""Prometheus metrics of one gateway: what its calls came to, and the state an operator alerts on.

Every gateway has its own `CollectorRegistry` (no process-global state: two gateways in one process, or a
test after another, never mix their counts). Counters and the latency histogram are updated once per call
from its envelope; breaker states, unknown write outcomes, pending approvals and drift-blocked tools are
read when `/metrics` is scraped. Labels are bounded: the upstream and the gateway tool name (both from the
config), the error class (a fixed set) and the error code (at most `MAX_CODES` distinct ones, then `OTHER`);
never an argument value, a principal, or an id.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..contract._envelope import Envelope
from ._drift import CODE as DRIFT_CODE

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
#: Distinct error codes a gateway labels separately; any further code is counted as `OTHER`.
MAX_CODES: Final = 100
#: Seconds: from a fast journal replay (sub-millisecond) to a tool at the default 30 s timeout and beyond.
BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
BREAKER_STATES: Final = ("closed", "open", "half_open")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the gateway's state is at scrape time (read by `Gateway.snapshot`)."""

    breakers: Mapping[str, str] = field(default_factory=dict)  # upstream -> closed | open | half_open
    unknown_outcomes: int | None = None  # writes whose outcome is unknown, not yet reconciled (None: unreadable)
    approvals_pending: int | None = None
    drift_blocked_tools: int = 0
    limit_rules: int = 0
    shared_state_degraded: bool = False
    neutralised: Mapping[str, int] = field(default_factory=dict)  # upstream -> places of its listing neutralised


class _StateCollector(Collector):
    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self._snapshot = snapshot

    def describe(self) -> list[Metric]:
        return []  # read at scrape time only (registering must not read the store)

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot()
        breaker = GaugeMetricFamily("toolproof_gateway_breaker_state",
                                    "Circuit breaker state per upstream: 1 for the current state, 0 for the others.",
                                    labels=["upstream", "state"])
        for upstream, state in sorted(snap.breakers.items()):
            for name in BREAKER_STATES:
                breaker.add_metric([upstream, name], 1.0 if state == name else 0.0)
        yield breaker
        if snap.unknown_outcomes is not None:
            yield GaugeMetricFamily("toolproof_gateway_journal_unknown_outcomes",
                                    "Writes whose outcome is unknown and not yet reconciled by a person "
                                    "(journal status unknown).", value=snap.unknown_outcomes)
        if snap.approvals_pending is not None:
            yield GaugeMetricFamily("toolproof_gateway_approvals_pending",
                                    "Approval requests waiting for a person.", value=snap.approvals_pending)
        yield GaugeMetricFamily("toolproof_gateway_drift_blocked_tools",
                                "Served tools whose upstream definition changed and is blocked until approved.",
                                value=snap.drift_blocked_tools)
        cleaned = GaugeMetricFamily("toolproof_gateway_listing_neutralised",
                                    "Places of an untrusted upstream's served tool listing (descriptions, titles, "
                                    "schema words) neutralised, cut or flagged, per upstream.", labels=["upstream"])
        for upstream, count in sorted(snap.neutralised.items()):
            cleaned.add_metric([upstream], float(count))
        yield cleaned
        yield GaugeMetricFamily("toolproof_gateway_limit_rules", "Rate limit rules in force.", value=snap.limit_rules)
        yield GaugeMetricFamily("toolproof_gateway_shared_state_degraded",
                                "1 while the fleet's shared state is unreachable (local decisions only).",
                                value=1.0 if snap.shared_state_degraded else 0.0)


class GatewayMetrics:
    """The metrics of one gateway; `observe` once per call, `render` for a scrape."""

    def __init__(self, snapshot: Callable[[], Snapshot] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.calls = Counter("toolproof_gateway_calls", "Tool calls the gateway answered, by outcome (ok, error).",
                             ["upstream", "tool", "outcome"], registry=r)
        self.errors = Counter("toolproof_gateway_errors",
                              "Failure envelopes by error class and code (the model's view of what went wrong).",
                              ["upstream", "tool", "error_class", "error_code"], registry=r)
        self.duration = Histogram("toolproof_gateway_call_duration_seconds",
                                  "Time to answer one tools/call, retries and journal included (seconds).",
                                  ["upstream", "tool"], buckets=BUCKETS, registry=r)
        self.retries = Counter("toolproof_gateway_retries", "Attempts beyond the first (automatic retries).",
                               ["upstream", "tool"], registry=r)
        self.replays = Counter("toolproof_gateway_replays",
                               "Calls answered from the journal (a repeated write: the first answer again).",
                               ["upstream", "tool"], registry=r)
        self.capped = Counter("toolproof_gateway_responses_capped",
                              "Upstream answers cut because they were over [caps].", ["upstream", "tool"], registry=r)
        self.drift_blocked = Counter("toolproof_gateway_drift_blocked_calls",
                                     "Calls refused because the tool's definition changed and was not approved.",
                                     ["upstream", "tool"], registry=r)
        self.reloads = Counter("toolproof_gateway_config_reloads",
                               "Configuration reloads (SIGHUP), by result (applied, rejected).", ["result"], registry=r)
        self.reload_ok = Gauge("toolproof_gateway_config_last_reload_successful",
                               "1 if the last reload was applied (or none was asked), 0 if it was rejected.",
                               registry=r)
        self.reload_ok.set(1)
        if snapshot is not None:
            r.register(_StateCollector(snapshot))
        self._codes: set[str] = set()
        self._lock = threading.Lock()
        self._hot: dict[tuple[str, str], tuple[Any, Any]] = {}  # (upstream, tool) -> (duration, ok) children

    def _code(self, code: str) -> str:
        if code in self._codes:
            return code
        with self._lock:
            if len(self._codes) >= MAX_CODES:
                return "OTHER"
            self._codes.add(code)
        return code

    def observe(self, upstream: str, tool: str, envelope: Envelope, seconds: float, *, capped: int = 0) -> None:
        """Count one call from its envelope (the hot path: two increments on children looked up once)."""
        hot = self._hot.get((upstream, tool))
        if hot is None:
            hot = self._hot[(upstream, tool)] = (self.duration.labels(upstream, tool),
                                                 self.calls.labels(upstream, tool, "ok"))
        hot[0].observe(seconds)
        meta = envelope.meta
        if meta.attempts > 1:
            self.retries.labels(upstream, tool).inc(meta.attempts - 1)
        if meta.replayed:
            self.replays.labels(upstream, tool).inc()
        if capped:
            self.capped.labels(upstream, tool).inc(capped)
        error = envelope.error
        if error is None:
            hot[1].inc()
            return
        self.calls.labels(upstream, tool, "error").inc()
        self.errors.labels(upstream, tool, error.error_class.value, self._code(error.code)).inc()
        if error.code == DRIFT_CODE:
            self.drift_blocked.labels(upstream, tool).inc()

    def reloaded(self, applied: bool) -> None:
        self.reloads.labels("applied" if applied else "rejected").inc()
        self.reload_ok.set(1 if applied else 0)

    def render(self) -> bytes:
        """The text exposition format (blocking: the state collector may read the store)."""
        return generate_latest(self.registry)
