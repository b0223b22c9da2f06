"""The gateway's runner: the pipeline with two stages in front (rate limits, request size) and, around every
call, the response-cap notes and the metrics.

The stages are the runner's own kind (see `toolproof.pipeline._stages`), bound to this runner's limiter and
caps (a reload swaps them), so a refused call is audited like any other (`not_dispatched`) and answered with
an envelope; neither tells the loop guard, since a caller that waits as told and calls again is doing the
right thing.
"""

from __future__ import annotations

import time
from typing import Any

from ..catalog._toolset import Toolset
from ..contract._context import CallContext
from ..contract._envelope import Envelope, Meta
from ..contract._errors import RateLimited, ToolError
from ..pipeline._effects import Io, Steps
from ..pipeline._runner import Runner
from ..pipeline._stages import STAGES, Step, audit
from ..pipeline._state import CallState, Env
from ._caps import CALL_NOTES, CallNotes, ResponseCaps, request_size, request_too_large
from ._limits import Limiter
from ._metrics import GatewayMetrics


class GatewayRunner(Runner):
    """A `Runner` with the gateway's limits and caps (both replaceable while serving: a reload swaps them)."""

    def __init__(self, toolset: Toolset, *, limiter: Limiter | None = None, caps: ResponseCaps | None = None,
                 metrics: GatewayMetrics | None = None, **options: Any) -> None:
        super().__init__(toolset, **options)
        self.limiter = limiter or Limiter()
        self.caps = caps or ResponseCaps()
        self.metrics = metrics
        self.stages = (self.limit, self.request_cap, *STAGES)

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

    def limit(self, env: Env, s: CallState) -> Step:
        """The `[[limits]]` buckets: a caller over a limit is answered `rate_limited`, nothing is sent."""
        limiter = self.limiter
        if not limiter.rules:
            return None
        caller, name, upstream = s.context.principal, s.tool.name, s.tool.upstream or ""
        if not limiter.shared_for(name, upstream):
            refused = limiter.check(caller, name, upstream)
            return None if refused is None else _refused(env, s, refused)
        return _limit_shared(env, s, limiter, caller, name, upstream)

    def request_cap(self, env: Env, s: CallState) -> Step:
        """`[caps] max_request_bytes`: arguments too big to be a sensible call are refused before validation.
        The audit record keeps their size, not them."""
        caps = self.caps
        size = request_size(s.raw, caps.max_request_bytes)
        if size is None:
            return None
        s.raw = {"toolproof_request_too_large_bytes": size}
        return _refused(env, s, request_too_large(size, caps.max_request_bytes))


def _with_extra(envelope: Envelope, **extra: Any) -> Envelope:
    m = envelope.meta
    meta = Meta(m.tool, m.call_id, m.schema_version, m.attempts, m.idempotency_key, m.replayed, {**m.extra, **extra})
    return Envelope(envelope.ok, meta, envelope.result, envelope.error)


def _refused(env: Env, s: CallState, error: ToolError) -> Envelope:
    audit(env, s, "not_dispatched", error)
    return Envelope.failure(error, Meta(s.tool.name, s.context.call_id or "", s.tool.schema_version, 0))


def _limit_shared(env: Env, s: CallState, limiter: Limiter, caller: str | None, name: str, upstream: str) -> Steps:
    refused: RateLimited | None = yield Io(limiter.check, None, (caller, name, upstream))
    return None if refused is None else _refused(env, s, refused)


