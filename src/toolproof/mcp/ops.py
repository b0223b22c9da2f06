"""The gateway's runner: the pipeline with two stages in front (rate limits, request size) and, around every
call, the response-cap notes and the metrics.

The stages are the runner's own kind (see `toolproof.pipeline.stages`), so a refused call is audited like
any other (`not_dispatched`) and answered with an envelope; neither tells the loop guard, since a caller
that waits as told and calls again is doing the right thing.
"""

from __future__ import annotations

import time
from typing import Any

from ..catalog.toolset import Toolset
from ..contract.context import CallContext
from ..contract.envelope import Envelope, Meta
from ..contract.errors import RateLimited, ToolError
from ..pipeline.effects import Io, Steps
from ..pipeline.runner import Runner
from ..pipeline.stages import STAGES, Step, audit
from ..pipeline.state import CallState
from .caps import CALL_NOTES, CallNotes, ResponseCaps, request_size, request_too_large
from .limits import Limiter
from .metrics import GatewayMetrics


class GatewayRunner(Runner):
    """A `Runner` with the gateway's limits and caps (both replaceable while serving: a reload swaps them)."""

    def __init__(self, toolset: Toolset, *, limiter: Limiter | None = None, caps: ResponseCaps | None = None,
                 metrics: GatewayMetrics | None = None, **options: Any) -> None:
        super().__init__(toolset, **options)
        self.limiter = limiter or Limiter()
        self.caps = caps or ResponseCaps()
        self.metrics = metrics

    async def call(self, name: str, arguments: Any = None, *, context: CallContext | None = None) -> Envelope:
        notes = CallNotes()
        token = CALL_NOTES.set(notes)
        started = time.perf_counter()
        try:
            envelope = await super().call(name, arguments, context=context)
        finally:
            CALL_NOTES.reset(token)
        if notes.capped:
            envelope = _with_extra(envelope, response_capped=notes.capped[-1].as_meta())
        if self.metrics is not None:
            tool = self.toolset.get(name)
            self.metrics.observe(tool.upstream or "", name, envelope, time.perf_counter() - started,
                                 capped=len(notes.capped))
        return envelope


def _with_extra(envelope: Envelope, **extra: Any) -> Envelope:
    m = envelope.meta
    meta = Meta(m.tool, m.call_id, m.schema_version, m.attempts, m.idempotency_key, m.replayed, {**m.extra, **extra})
    return Envelope(envelope.ok, meta, envelope.result, envelope.error)


def _refused(rt: Runner, s: CallState, error: ToolError) -> Envelope:
    audit(rt, s, "not_dispatched", error)
    return Envelope.failure(error, Meta(s.tool.name, s.context.call_id or "", s.tool.schema_version, 0))


def limit(rt: Runner, s: CallState) -> Step:
    """The `[[limits]]` buckets: a caller over a limit is answered `rate_limited`, nothing is sent."""
    limiter = rt.limiter if isinstance(rt, GatewayRunner) else None
    if limiter is None or not limiter.rules:
        return None
    caller, name, upstream = s.context.principal, s.tool.name, s.tool.upstream or ""
    if not limiter.shared_for(name, upstream):
        refused = limiter.check(caller, name, upstream)
        return None if refused is None else _refused(rt, s, refused)
    return _limit_shared(rt, s, limiter, caller, name, upstream)


def _limit_shared(rt: Runner, s: CallState, limiter: Limiter, caller: str | None, name: str, upstream: str) -> Steps:
    refused: RateLimited | None = yield Io(lambda: limiter.check(caller, name, upstream))
    return None if refused is None else _refused(rt, s, refused)


def request_cap(rt: Runner, s: CallState) -> Step:
    """`[caps] max_request_bytes`: arguments too big to be a sensible call are refused before validation.
    The audit record keeps their size, not them."""
    caps = rt.caps if isinstance(rt, GatewayRunner) else None
    if caps is None:
        return None
    size = request_size(s.raw, caps.max_request_bytes)
    if size is None:
        return None
    s.raw = {"toolproof_request_too_large_bytes": size}
    return _refused(rt, s, request_too_large(size, caps.max_request_bytes))


GatewayRunner.stages = (limit, request_cap, *STAGES)
