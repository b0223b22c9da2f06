"""The one pipeline: guard -> validate -> (key -> journal) -> breaker -> dispatch -> classify -> retry -> envelope.

The pipeline is written once, as a generator that yields *effects* (`Dispatch`, `Sleep`, `Io`) and gets
their outcomes back. Two small drivers run it: `Runner.call` awaits effects on the event loop,
`Runner.call_sync` performs them directly, so a sync handler on the sync path never touches an event loop.
Policy lives in the generator, and the decisions it takes are made in `policy.py` (retry or stop),
`breaker.py` (dispatch or refuse) and `guard.py` (a repeat of a failing call); I/O lives in the drivers.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any, Final, NamedTuple, TypeAlias

from ..audit.trail import AuditWriter, Hook, ToolSpans, build_stop, effect_status, log_stop, stop_log
from ..catalog.toolset import Toolset
from ..contract.classify import classify_exception
from ..contract.context import CallContext, CallIds
from ..contract.envelope import Envelope, ErrorInfo, Meta
from ..contract.errors import (
    CLASS_SPECS,
    TRANSIENT_CLASSES,
    ErrorClass,
    InvalidArgument,
    NextAction,
    OutcomeUnknown,
    ToolError,
)
from ..contract.tool import Tool
from ..journal.journal import Claim, Journal, in_flight_conflict, replay_envelope
from ..journal.keys import KeyParts, key_parts_for
from ..orchestration.breaker import BreakerConfig, BreakerState, CircuitBreaker
from ..orchestration.guard import LoopGuard
from ..orchestration.policy import (
    STOP_HINTS,
    RetryPolicy,
    RetryTokenBucket,
    RunBudget,
    RunState,
    StopReason,
    decide_retry,
)
from ..stores import Store, open_store
from ..stores.intent import Intent
from ..stores.records import EffectStatus, StopRecord

# --- effects: what the pipeline asks its driver to do -------------------------------------------------------


# Effects and outcomes are NamedTuples: immutable like frozen dataclasses, and several times cheaper to
# build (one of each per call, on the hot path).


class Dispatch(NamedTuple):
    """Run the tool's handler with these arguments, for at most `timeout_s` seconds when given."""

    tool: Tool
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    timeout_s: float | None = None


class Sleep(NamedTuple):
    """Wait this many seconds (the driver uses the runner's clock)."""

    seconds: float


class Io(NamedTuple):
    """Run a piece of I/O (a store call): `sync()` on the sync path, `async_()` when given on the async path."""

    sync: Callable[[], Any]
    async_: Callable[[], Awaitable[Any]] | None = None


Effect: TypeAlias = Dispatch | Sleep | Io


class Outcome(NamedTuple):
    """What a dispatch produced: a value, or the exception the handler raised, and how long it took."""

    value: Any = None
    error: BaseException | None = None
    elapsed_s: float = 0.0


Pipeline: TypeAlias = Generator[Effect, Any, Envelope]


@dataclass(frozen=True, slots=True)
class Clock:
    """Time for the runner, injectable so that policy tests run in milliseconds."""

    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


SYSTEM_CLOCK: Final = Clock()
DEFAULT_RETRY: Final = RetryPolicy()
DEFAULT_BREAKER: Final = BreakerConfig()
DEFAULT_RUN_BUDGET: Final = RunBudget()
_MAX_RUNS: Final = 10_000


class _Default:
    """Marks an option left at its default (a fresh stateful object per runner)."""


_DEFAULT: Final = _Default()

BreakerOption: TypeAlias = BreakerConfig | Mapping[str, BreakerConfig | None] | None


class Runner:
    """Runs tool calls through the contract and returns an `Envelope` for every call.

    `Runner(toolset)` keeps its state in memory and writes no file; `store=` (a `Store` or a URL such as
    `sqlite:///toolproof.sqlite3` or `postgresql://...`) or `TOOLPROOF_STORE` makes it durable.

    Orchestration options (all keyword-only, all with working defaults):
    `retry` (a `RetryPolicy`; None never retries), `budget` (a `RunBudget` per `CallContext.run_id`; None
    for none), `breakers` (a `BreakerConfig` for every tool or upstream, a mapping of tool/upstream name to
    config with `"*"` for the rest, or None), `retry_bucket` (a `RetryTokenBucket`, shareable between
    runners; None for none), `loop_guard` (a `LoopGuard`; None to turn it off), `audit` (write the audit
    trail to the store), `hooks` (callables given every `AuditRecord` and `StopRecord`), `otel` (True, or an
    OpenTelemetry tracer, for `execute_tool` spans), `rng` (the jitter's random source).
    """

    def __init__(
        self,
        toolset: Toolset,
        *,
        store: Store | str | None = None,
        clock: Clock = SYSTEM_CLOCK,
        retry: RetryPolicy | None = DEFAULT_RETRY,
        budget: RunBudget | None = DEFAULT_RUN_BUDGET,
        breakers: BreakerOption = DEFAULT_BREAKER,
        retry_bucket: RetryTokenBucket | _Default | None = _DEFAULT,
        loop_guard: LoopGuard | _Default | None = _DEFAULT,
        audit: bool = True,
        hooks: Sequence[Hook] = (),
        otel: bool | Any = False,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if not isinstance(toolset, Toolset):
            raise TypeError(f"Runner needs a toolproof.Toolset, got {type(toolset).__name__}")
        self.toolset = toolset
        self.clock = clock
        self.store = store if isinstance(store, Store) else open_store(store)
        # --- journal (issue 4): exactly-once bookkeeping for writes; replace to tune wait/lease ---
        self.journal = Journal(self.store)
        self._call_ids = CallIds()
        self.retry = retry if retry is not None else RetryPolicy(max_attempts=1, max_wall_s=None)
        self.budget = budget
        self.retry_bucket = RetryTokenBucket() if isinstance(retry_bucket, _Default) else retry_bucket
        self.loop_guard = LoopGuard() if isinstance(loop_guard, _Default) else loop_guard
        self._breaker_option = breakers
        self._breakers: dict[str, CircuitBreaker | None] = {}
        self._breaker_lock = threading.Lock()
        self._runs: dict[str, RunState] = {}
        self._rng = rng
        self._spans = None if otel is False or otel is None else ToolSpans(None if otel is True else otel)
        self._writer = AuditWriter(self.store, hooks=hooks, persist=audit) if (audit or hooks) else None
        if self._writer is not None:
            # Flush at interpreter exit or when the runner is collected, even if close() was forgotten.
            self._finalizer = weakref.finalize(self, self._writer.close)

    def close(self) -> None:
        """Write the queued audit records, then flush and release the store."""
        if self._writer is not None:
            self._finalizer.detach()
            self._writer.close()
        self.store.close()

    def flush(self) -> None:
        """Write the queued audit records now (they are written in the background anyway)."""
        if self._writer is not None:
            self._writer.flush()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def breaker(self, name: str) -> CircuitBreaker | None:
        """The breaker for a tool or upstream name (created on first use), or None when it has none."""
        found = self._breakers.get(name, _DEFAULT)
        if not isinstance(found, _Default):
            return found
        option = self._breaker_option
        config: BreakerConfig | None
        if option is None or isinstance(option, BreakerConfig):
            config = option
        else:
            config = option[name] if name in option else option.get("*")
        with self._breaker_lock:
            existing = self._breakers.get(name, _DEFAULT)
            if not isinstance(existing, _Default):
                return existing
            made = None if config is None else CircuitBreaker(name, config, clock=self.clock.monotonic)
            self._breakers[name] = made
            return made

    # --- public entry points ------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Any = None, *, context: CallContext | None = None) -> Envelope:
        """Validate and run one call; every outcome is an `Envelope`. Unknown tools raise `UnknownTool`."""
        tool = self.toolset.get(name)
        pipeline = self._start(tool, arguments, context)
        outcome: Any = None
        try:
            while True:
                effect = pipeline.send(outcome)
                if type(effect) is Dispatch:
                    outcome = await self._dispatch_async(effect)
                elif type(effect) is Sleep:
                    await self.clock.async_sleep(effect.seconds)
                    outcome = None
                else:
                    assert isinstance(effect, Io)
                    outcome = await effect.async_() if effect.async_ is not None else effect.sync()
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            pipeline.close()  # cancelled mid-call: the pipeline's cleanup runs here, in this context

    def call_sync(self, name: str, arguments: Any = None, *, context: CallContext | None = None) -> Envelope:
        """The same pipeline for synchronous callers; sync handlers run without an event loop."""
        tool = self.toolset.get(name)
        pipeline = self._start(tool, arguments, context)
        outcome: Any = None
        try:
            while True:
                effect = pipeline.send(outcome)
                if type(effect) is Dispatch:
                    outcome = self._dispatch_sync(effect)
                elif type(effect) is Sleep:
                    self.clock.sleep(effect.seconds)
                    outcome = None
                else:
                    assert isinstance(effect, Io)
                    outcome = effect.sync()
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            pipeline.close()

    async def aclose(self) -> None:
        """Flush and release the store from inside an event loop (async connections too). (issue 4)"""
        await self.store.aclose()

    def reconcile(self, key: str, outcome: str = "done", *, result: Any = None, note: str | None = None) -> Intent:
        """Settle a write whose outcome was unknown, after a person checked: `done` (repeats replay `result`)
        or `not_done` (released; the call may be made again). Resolves the linked stop records too."""
        if outcome not in ("done", "not_done"):
            raise ValueError(f"outcome must be 'done' or 'not_done', got {outcome!r}")
        return self.journal.reconcile(key, "done" if outcome == "done" else "not_done", result=result, note=note)

    # --- the pipeline ---------------------------------------------------------------------------------------

    def _start(self, tool: Tool, arguments: Any, context: CallContext | None) -> Pipeline:
        if context is not None and type(context) is not CallContext and not isinstance(context, CallContext):
            raise TypeError(f"context must be a toolproof.CallContext, not {type(context).__name__}")
        if context is None:
            ctx = CallContext(call_id=self._call_ids(), attempt=1)
        elif context.call_id is None or context.attempt == 0:
            c = context  # built field by field: dataclasses.replace costs microseconds on the hot path
            ctx = CallContext(c.conversation_id, c.principal, c.call_id or self._call_ids(), c.run_id, c.occurrence,
                              c.idempotency_key, c.attempt or 1, c.metadata)
        else:
            ctx = context
        if self._spans is not None:
            return self._traced(tool, arguments, ctx)
        return self._pipeline(tool, arguments, ctx)

    def _traced(self, tool: Tool, arguments: Any, ctx: CallContext) -> Pipeline:
        """The pipeline inside an `execute_tool` span, current while it runs (handler spans nest under it)."""
        spans = self._spans
        assert spans is not None
        span, token = spans.start(tool, ctx.call_id or "")
        try:
            envelope = yield from self._pipeline(tool, arguments, ctx)
        except BaseException as exc:  # includes GeneratorExit: the driver closes an abandoned pipeline
            spans.end(span, token, None, exc)
            raise
        spans.end(span, token, envelope)
        return envelope

    def _pipeline(self, tool: Tool, arguments: Any, ctx: CallContext, fallback_from: str | None = None) -> Pipeline:
        clock = self.clock
        call_id: str = ctx.call_id  # type: ignore[assignment]  # set by _start
        writer = self._writer
        guard = self.loop_guard
        scope = ctx.run_id or ctx.conversation_id
        started = clock.monotonic()

        # 1. The loop guard: an identical repeat of a call that just failed is not sent again.
        if guard is not None and scope is not None:
            blocked = guard.check(scope, tool.name, arguments)
            if blocked is not None:
                if writer is not None:
                    writer.submit((time.time(), tool, ctx, arguments, "skipped", 0, 0.0, "not_dispatched",
                                   blocked.error))
                return (yield from self._give_up(tool, ctx, arguments, blocked.error, 0, blocked.reason, False))

        # 2. Validation, before any side effect.
        parts: KeyParts | None = None
        try:
            args = tool.parse_arguments(arguments)
            # --- journal (issue 4): the key is ours, never the model's; the handler gets it in its context ---
            if tool.effect == "write":
                parts = key_parts_for(tool, args, ctx)
                ctx = ctx.with_updates(idempotency_key=parts.key)
            call_args, call_kwargs = tool.bind(args, ctx)
        except InvalidArgument as exc:
            if writer is not None:
                writer.submit((time.time(), tool, ctx, arguments, "failed", 0, clock.monotonic() - started,
                               "invalid", exc))
            info = ErrorInfo.from_exception(exc)
            return (yield from self._failed(tool, ctx, arguments, info, 0, None, False, scope, arguments))

        # 3. The journal (writes only): claim the intent before dispatch; replay or refuse repeats.
        intent: Intent | None = None
        if parts is not None:
            intent = self.journal.new_intent(tool, args, ctx, parts)
            claim = yield from self._journal_claim(intent)
            if claim.kind == "replay":
                return replay_envelope(claim.intent, tool, call_id)
            if claim.kind != "proceed":
                assert claim.error is not None
                return Envelope.failure(claim.error, Meta(tool.name, call_id, tool.schema_version, 0, parts.key))

        envelope = yield from self._attempts(tool, ctx, arguments, args, call_args, call_kwargs, started, scope,
                                             fallback_from)

        # 8. The journal: record the outcome against the key (replayed to repeats), or release the intent.
        if intent is not None:
            journal, claimed, final = self.journal, intent, envelope
            envelope = yield Io(lambda: journal.record(claimed, tool, final, args),
                                lambda: journal.arecord(claimed, tool, final, args))
        return envelope

    def _attempts(
        self, tool: Tool, ctx: CallContext, arguments: Any, args: dict[str, Any], call_args: tuple[Any, ...],
        call_kwargs: dict[str, Any], started: float, scope: str | None, fallback_from: str | None,
    ) -> Pipeline:
        """Dispatch under the breaker, classify, and retry while the policy allows; the final envelope."""
        clock = self.clock
        call_id: str = ctx.call_id  # type: ignore[assignment]
        writer = self._writer
        guard = self.loop_guard
        policy = self.retry
        deadline = None if policy.max_wall_s is None else started + policy.max_wall_s
        run = self._run_state(ctx.run_id, started) if ctx.run_id is not None and self.budget is not None else None
        breaker = self.breaker(tool.upstream or tool.name) if self._breaker_option is not None else None
        attempts = 0
        retry_cost = 0
        while True:
            # 4. The breaker: an open circuit is not dispatched to.
            trial = False
            if breaker is not None:
                admission = breaker.admit()
                if not admission.allowed:
                    if writer is not None:
                        writer.submit((time.time(), tool, ctx, args, "ok", attempts + 1, 0.0, "not_dispatched",
                                       None))
                    return (yield from self._circuit_open(tool, ctx, args, attempts, admission.retry_after_s,
                                                         fallback_from))
                trial = admission.trial

            # 5. Dispatch, under the tool's timeout clamped to what is left of the call's wall budget.
            attempts += 1
            timeout = tool.timeout_s
            if timeout is not None and deadline is not None:
                timeout = max(min(timeout, deadline - clock.monotonic()), 0.001)
            outcome: Outcome = yield Dispatch(tool, call_args, call_kwargs, timeout)

            # 6. Classify.
            error: ToolError | None = None
            result: Any = None
            if outcome.error is None:
                try:
                    result = tool.check_output(outcome.value)
                except ToolError as exc:
                    error = exc
            else:
                # A lost reply is a possible double effect only for a write that may not be repeated; an
                # idempotent write (its owner enforces the key) may be retried like a read.
                may_repeat = tool.effect == "read" or tool.idempotent
                error = classify_exception(outcome.error, effect="read" if may_repeat else "write", dispatched=True)
            if error is None:
                if breaker is not None:
                    breaker.record(failure=False, trial=trial)
                if self.retry_bucket is not None:
                    self.retry_bucket.on_success(retry_cost)
                if writer is not None:
                    writer.submit((time.time(), tool, ctx, args, "ok", attempts, outcome.elapsed_s, "ok", None))
                if guard is not None and scope is not None:
                    guard.succeeded(scope, tool.name, read=tool.effect == "read")
                if fallback_from is None:
                    return Envelope(True, Meta(tool.name, call_id, tool.schema_version, attempts), result)
                meta = Meta(tool.name, call_id, tool.schema_version, attempts, extra={"fallback_from": fallback_from})
                return Envelope(True, meta, result)

            transient = error.error_class in TRANSIENT_CLASSES
            if breaker is not None:
                breaker.record(failure=transient, trial=trial)
            if (
                transient
                and tool.effect == "write"
                and not tool.idempotent
                and error.error_class is ErrorClass.TRANSIENT_UPSTREAM
                and error.effect_done is not False  # the raiser knows nothing was sent
            ):
                # A write that may not be repeated failed after dispatch: its effect may have happened.
                error = OutcomeUnknown(
                    f"The write failed after it was sent ({error.code}: {error.message}); it may or may not "
                    "have been applied.",
                    code="FAILED_AFTER_DISPATCH",
                    hint="Do not call again. A person reconciles the idempotency key.",
                    idempotency_key=error.idempotency_key or ctx.idempotency_key,
                )
            if writer is not None:
                writer.submit((time.time(), tool, ctx, args, "ok", attempts, outcome.elapsed_s, "error", error))

            # 7. Retry, or stop: `decide_retry` says which and why.
            decision = decide_retry(
                policy,
                error_class=error.error_class,
                attempts=attempts,
                now=clock.monotonic(),
                effect=tool.effect,
                idempotent=tool.idempotent,
                risk=tool.risk,
                retry_after_s=error.retry_after_s,
                timed_out="TIMEOUT" in error.code,
                call_deadline=deadline,
                run=run,
                run_budget=self.budget,
                bucket=self.retry_bucket,
                rand=self._rng(),
            )
            if decision.retry and breaker is not None and breaker.state is BreakerState.OPEN:
                # This failure opened the breaker: waiting out the backoff would only end in a refusal.
                admission = breaker.admit()
                if not admission.allowed:
                    return (yield from self._circuit_open(tool, ctx, args, attempts, admission.retry_after_s,
                                                         fallback_from))
            if decision.retry:
                retry_cost = decision.tokens
                if run is not None:
                    run.retries += 1
                if decision.delay_s > 0:
                    yield Sleep(decision.delay_s)
                ctx = replace(ctx, attempt=attempts + 1)
                call_args, call_kwargs = tool.bind(args, ctx)
                continue
            info = ErrorInfo.from_exception(error)
            if decision.reason in STOP_HINTS:
                retry_after = f"{error.retry_after_s:.0f}" if error.retry_after_s is not None else "?"
                info = replace(info, hint=STOP_HINTS[decision.reason].format(attempts=attempts,
                                                                              retry_after=retry_after))
            if transient and fallback_from is None and tool.fallback and tool.effect == "read":
                fallback = self._read_fallback(tool)
                if fallback is not None:
                    return (yield from self._pipeline(fallback, args, ctx, fallback_from=tool.name))
            return (yield from self._failed(tool, ctx, args, info, attempts, decision.reason, True, scope, arguments))

    def _failed(
        self, tool: Tool, ctx: CallContext, arguments: Any, info: ErrorInfo, attempts: int,
        reason: StopReason | None, dispatched: bool, scope: str | None, raw: Any,
    ) -> Pipeline:
        """A failed call: tell the loop guard (about the arguments as sent), and give up when it must."""
        guard = self.loop_guard
        if guard is not None and scope is not None:
            # A write held by the journal (outcome unknown) is answered by the journal, with its key, on repeat.
            held = tool.effect == "write" and info.error_class is ErrorClass.OUTCOME_UNKNOWN
            at_limit = guard.failed(scope, tool.name, raw, info, remember=not info.retryable and not held)
            if at_limit and reason is None:
                reason = StopReason.FAILURE_LIMIT
        if reason is None and info.error_class is ErrorClass.OUTCOME_UNKNOWN:
            reason = StopReason.OUTCOME_UNKNOWN
        elif reason is None and info.next_action is NextAction.ESCALATE:
            reason = StopReason.NON_RETRYABLE
        if reason is None:
            return Envelope.failure(info, Meta(tool.name, ctx.call_id or "", tool.schema_version, attempts))
        return (yield from self._give_up(tool, ctx, arguments, info, attempts, reason, dispatched))

    def _give_up(
        self, tool: Tool, ctx: CallContext, arguments: Any, info: ErrorInfo, attempts: int, reason: str,
        dispatched: bool, extra: dict[str, Any] | None = None,
    ) -> Pipeline:
        """The envelope of a give-up (same class, `next_action: escalate`) and its stop record."""
        if info.next_action is not NextAction.ESCALATE:
            info = replace(info, next_action=NextAction.ESCALATE)
        status: EffectStatus = effect_status(tool, info, dispatched=dispatched)
        stop = build_stop(tool, ctx, arguments, info, attempts=attempts, reason=str(reason), status=status,
                          extra=extra)
        yield Io(lambda: self._write_stop(stop))
        meta_extra: dict[str, Any] = {"stop_id": stop.id, "stop_reason": stop.reason}
        if extra:
            meta_extra.update(extra)
        return Envelope.failure(info, Meta(tool.name, ctx.call_id or "", tool.schema_version, attempts,
                                           extra=meta_extra))

    def _write_stop(self, stop: StopRecord) -> None:
        try:
            self.store.add_stop(stop)
        except Exception:
            stop_log.exception("could not write stop record %s", stop.id)
        if self._writer is not None:
            self._writer.emit_stop(stop)
        else:
            log_stop(stop)

    def _circuit_open(
        self, tool: Tool, ctx: CallContext, args: dict[str, Any], attempts: int, retry_after_s: float,
        fallback_from: str | None,
    ) -> Pipeline:
        """The breaker refused: a read falls back to its read-only fallback; anything else gives up."""
        if fallback_from is None and tool.fallback and tool.effect == "read":
            fallback = self._read_fallback(tool)
            if fallback is not None:
                return (yield from self._pipeline(fallback, args, ctx, fallback_from=tool.name))
        hint = f"{tool.name} is failing upstream; calls are let through again in about {retry_after_s:.0f} s."
        if tool.fallback:
            hint += f" The tool {tool.fallback} can serve instead; use it only if that fits the request."
        info = ErrorInfo(
            error_class=ErrorClass.TRANSIENT_UPSTREAM,
            code="CIRCUIT_OPEN",
            message=f"Calls to {tool.upstream or tool.name} are paused after repeated failures; this call "
            "was not sent.",
            retryable=CLASS_SPECS[ErrorClass.TRANSIENT_UPSTREAM].retryable,
            next_action=NextAction.ESCALATE,
            hint=hint,
            retry_after_s=round(max(retry_after_s, 0.0), 3),
            idempotency_key=ctx.idempotency_key,
        )
        return (yield from self._give_up(tool, ctx, args, info, attempts, StopReason.CIRCUIT_OPEN,
                                         attempts > 0))

    def _read_fallback(self, tool: Tool) -> Tool | None:
        """The tool's fallback when it is a read tool in this toolset (else None: only the hint names it)."""
        name = tool.fallback
        if name is None or name not in self.toolset:
            return None
        fallback = self.toolset.get(name)
        return fallback if fallback.effect == "read" else None

    def _run_state(self, run_id: str, now: float) -> RunState:
        runs = self._runs
        state = runs.get(run_id)
        if state is None:
            if len(runs) >= _MAX_RUNS:
                del runs[next(iter(runs))]
            state = runs[run_id] = RunState(now)
        return state

    def _journal_claim(self, intent: Intent) -> Generator[Effect, Any, Claim]:
        """Claim, or wait (bounded, polling) while the same key is in flight elsewhere. (issue 4)"""
        journal = self.journal
        deadline: float | None = None
        while True:
            claim: Claim = yield Io(lambda: journal.claim(intent), lambda: journal.aclaim(intent))
            if claim.kind != "wait":
                return claim
            now = self.clock.monotonic()
            deadline = now + journal.wait_s if deadline is None else deadline
            if now >= deadline:
                return Claim("refuse", claim.intent, in_flight_conflict(claim.intent))
            yield Sleep(min(journal.poll_s, max(deadline - now, 0.0)))

    # --- drivers ----------------------------------------------------------------------------------------------

    def _dispatch_sync(self, effect: Dispatch) -> Outcome:
        tool = effect.tool
        start = self.clock.monotonic()
        try:
            if tool.is_async:
                value = _run_coroutine_blocking(tool.handler(*effect.args, **effect.kwargs), effect.timeout_s)
            elif effect.timeout_s is not None:
                value = _in_thread(tool, effect).result(effect.timeout_s)
            else:
                value = tool.handler(*effect.args, **effect.kwargs)
        except Exception as exc:
            return Outcome(error=exc, elapsed_s=self.clock.monotonic() - start)
        return Outcome(value=value, elapsed_s=self.clock.monotonic() - start)

    async def _dispatch_async(self, effect: Dispatch) -> Outcome:
        tool = effect.tool
        start = self.clock.monotonic()
        timeout = effect.timeout_s
        try:
            if tool.is_async:
                coro = tool.handler(*effect.args, **effect.kwargs)
                value = await (asyncio.wait_for(coro, timeout) if timeout is not None else coro)
            elif timeout is not None:
                value = await asyncio.wait_for(asyncio.wrap_future(_in_thread(tool, effect)), timeout)
            else:
                value = tool.handler(*effect.args, **effect.kwargs)
        except Exception as exc:
            return Outcome(error=exc, elapsed_s=self.clock.monotonic() - start)
        return Outcome(value=value, elapsed_s=self.clock.monotonic() - start)


def _in_thread(tool: Tool, effect: Dispatch) -> Future[Any]:
    """Run a sync handler on its own daemon thread so that the caller can stop waiting for it.

    Python cannot kill a thread: after a timeout the handler keeps running until it returns by itself (its
    result is then dropped). A daemon thread at least never blocks interpreter exit. Give handlers their
    own I/O timeouts too; `timeout_s` bounds the wait, not the work.
    """
    future: Future[Any] = Future()
    context = contextvars.copy_context()

    def target() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(context.run(tool.handler, *effect.args, **effect.kwargs))
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=target, name=f"toolproof-{tool.name}", daemon=True).start()
    return future


def _run_coroutine_blocking(coro: Any, timeout_s: float | None) -> Any:
    """Run an async handler from the sync path (not from inside a running event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise RuntimeError("call_sync() on an async tool from inside an event loop: use `await runner.call()`")

    async def bounded() -> Any:
        return await (asyncio.wait_for(coro, timeout_s) if timeout_s else coro)

    return asyncio.run(bounded())
