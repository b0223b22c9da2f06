"""`Runner`: runs tool calls through the pipeline and returns an `Envelope` for every call.

The runner holds the configuration and the state that outlives one call (breakers, run budgets, the loop
guard, the journal, the audit writer), gathered in the `Env` its stages are given; `stages.py` holds the
pipeline, `state.py` the environment and the state of one call, `effects.py` what the pipeline asks for and
`drivers.py` the two ways of doing it (`call`, `call_sync`).
"""

from __future__ import annotations

import asyncio
import random
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final, Generic, TypeAlias, TypeVar, overload

from ..approvals import DEFAULT_TTL_S, await_decision, wait_for_decision
from ..audit._trail import AuditWriter, Hook, ToolSpans
from ..catalog._toolset import Toolset
from ..contract._context import CallContext, CallIds, fresh_context, with_call
from ..contract._envelope import Envelope
from ..contract._tool import Tool
from ..fleet import SharedState, open_shared_state
from ..journal._journal import Journal, UnknownConversation
from ..orchestration.breaker import Breaker, BreakerConfig
from ..orchestration.guard import LoopGuard
from ..orchestration.policy import RetryBucket, RetryPolicy, RunBudget, RunState
from ..stores import Store, open_store
from ..stores._approval import ApprovalRequest
from ..stores._intent import Intent
from ..stores._steps import adrive, drive
from ._drivers import Effects
from ._effects import SYSTEM_CLOCK, Clock, Pipeline
from ._stages import STAGES, Stage, plan, run
from ._state import CallState, Env, Route

__all__ = ["Clock", "Runner"]

DEFAULT_RETRY: Final = RetryPolicy()
DEFAULT_BREAKER: Final = BreakerConfig()
DEFAULT_RUN_BUDGET: Final = RunBudget()
_MAX_RUNS: Final = 10_000


class _Default:
    """Marks an option left at its default (a fresh stateful object per runner)."""


_DEFAULT: Final = _Default()

BreakerOption: TypeAlias = BreakerConfig | Mapping[str, BreakerConfig | None] | None
_T = TypeVar("_T")


class _Part(Generic[_T]):
    """A runner attribute that lives in the runner's `Env`, where its stages see it. Setting one (say a tuned
    `Journal`) swaps in a new environment; a call already running keeps the one it started with."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, runner: None, owner: type) -> _Part[_T]: ...
    @overload
    def __get__(self, runner: Runner, owner: type) -> _T: ...
    def __get__(self, runner: Runner | None, owner: type) -> _Part[_T] | _T:
        if runner is None:
            return self
        value: _T = getattr(runner.env, self._name)
        return value

    def __set__(self, runner: Runner, value: _T) -> None:
        changes: dict[str, Any] = {self._name: value}
        runner._env = replace(runner.env, **changes)


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
    OpenTelemetry tracer, for `execute_tool` spans), `rng` (the jitter's random source), `shared_state` (where
    the breakers and the default retry bucket live: None for this process, or `redis://...` /
    `postgresql://...` to share them with a fleet of workers; see toolproof.fleet), `unknown_conversation`
    and `clarify_window_s` (what an identical write from a call naming no conversation gets: `"clarify"`,
    needs_clarification for `clarify_window_s`, default the journal's retention; or `"replay"`, merged;
    see docs/idempotency.md, "Who is asking"), `lease_s` and `heartbeat` (how long a write's claim is trusted
    without its worker: by default 30 s, renewed every 10 s while its handler runs, so a killed worker's claim
    lapses within the lease; `heartbeat=False` for a lease long enough for the whole run, see `Journal`).
    """

    #: The stages every call runs, in order (see `toolproof.pipeline._stages`); a subclass (or an instance) may
    #: add its own.
    stages: tuple[Stage, ...] = STAGES

    toolset: _Part[Toolset] = _Part()
    clock: _Part[Clock] = _Part()
    store: _Part[Store] = _Part()
    #: Exactly-once bookkeeping for writes; replace to tune wait/lease.
    journal: _Part[Journal] = _Part()
    writer: _Part[AuditWriter | None] = _Part()
    retry: _Part[RetryPolicy] = _Part()
    budget: _Part[RunBudget | None] = _Part()
    retry_bucket: _Part[RetryBucket | None] = _Part()
    loop_guard: _Part[LoopGuard | None] = _Part()
    shared_state: _Part[SharedState] = _Part()
    rng: _Part[Callable[[], float]] = _Part()
    #: How long an approval request waits for a person before it expires (seconds).
    approval_ttl_s: _Part[float] = _Part()

    def __init__(
        self,
        toolset: Toolset,
        *,
        store: Store | str | None = None,
        clock: Clock = SYSTEM_CLOCK,
        retry: RetryPolicy | None = DEFAULT_RETRY,
        budget: RunBudget | None = DEFAULT_RUN_BUDGET,
        breakers: BreakerOption = DEFAULT_BREAKER,
        retry_bucket: RetryBucket | _Default | None = _DEFAULT,
        loop_guard: LoopGuard | _Default | None = _DEFAULT,
        audit: bool = True,
        hooks: Sequence[Hook] = (),
        otel: bool | Any = False,
        rng: Callable[[], float] = random.random,
        shared_state: SharedState | str | None = None,
        unknown_conversation: UnknownConversation = "clarify",
        clarify_window_s: float | None = None,
        approval_ttl_s: float = DEFAULT_TTL_S,
        lease_s: float | None = None,
        heartbeat: bool = True,
    ) -> None:
        if not isinstance(toolset, Toolset):
            raise TypeError(f"Runner needs a toolproof.Toolset, got {type(toolset).__name__}")
        opened = store if isinstance(store, Store) else open_store(store)
        shared = shared_state if isinstance(shared_state, SharedState) else open_shared_state(shared_state)
        writer = AuditWriter(opened, hooks=hooks, persist=audit) if (audit or hooks) else None
        self._env = Env(
            toolset=toolset, clock=clock, store=opened,
            journal=Journal(opened, now=clock.time, unknown_conversation=unknown_conversation,
                            clarify_window_s=clarify_window_s, lease_s=lease_s, heartbeat=heartbeat),
            writer=writer,
            retry=retry if retry is not None else RetryPolicy(max_attempts=1, max_wall_s=None),
            budget=budget,
            retry_bucket=shared.bucket() if isinstance(retry_bucket, _Default) else retry_bucket,
            loop_guard=LoopGuard() if isinstance(loop_guard, _Default) else loop_guard,
            shared_state=shared, rng=rng, approval_ttl_s=approval_ttl_s, route=self.route, run_state=self.run_state)
        self._effects = Effects(clock)
        self._call_ids = CallIds().__call__  # a bound method: called cheaper than the instance
        self._breaker_option = breakers
        self._breakers: dict[str, Breaker | None] = {}
        self._breaker_lock = threading.Lock()
        self._runs: dict[str, RunState] = {}
        self._routes: dict[str, Route] = {}
        self._spans = None if otel is False or otel is None else ToolSpans(None if otel is True else otel)
        if writer is not None:
            # Flush at interpreter exit or when the runner is collected, even if close() was forgotten.
            self._finalizer = weakref.finalize(self, writer.close)

    @property
    def env(self) -> Env:
        """What this runner's stages are given (its parts); a stage added by a subclass reads the same."""
        return self._env

    def close(self) -> None:
        """Write the queued audit records, then flush and release the store."""
        self._env.journal.close()
        self._close_writer()
        self.store.close()
        self.shared_state.close()

    async def aclose(self) -> None:
        """`close()` from inside an event loop: the same audit records written, off the loop."""
        await asyncio.to_thread(self._env.journal.close)
        await asyncio.to_thread(self._close_writer)
        await self.store.aclose()
        await asyncio.to_thread(self.shared_state.close)

    def _close_writer(self) -> None:
        """The shared first half of `close` and `aclose`: every queued audit record is written."""
        if self.writer is not None:
            self._finalizer.detach()
            self.writer.close()

    def flush(self) -> None:
        """Write the queued audit records now (they are written in the background anyway)."""
        if self.writer is not None:
            self.writer.flush()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Runner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def breaker(self, name: str) -> Breaker | None:
        """The breaker for a tool or upstream name (created on first use), or None when it has none."""
        found = self._breakers.get(name, _DEFAULT)
        if found is not _DEFAULT:
            return found  # type: ignore[return-value]
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
            made = None if config is None else self.shared_state.breaker(name, config, clock=self.clock.monotonic)
            self._breakers[name] = made
            return made

    # --- public entry points ------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Any = None, *, context: CallContext | None = None) -> Envelope:
        """Validate and run one call; every outcome is an `Envelope`. Unknown tools raise `UnknownTool`."""
        return await adrive(self._pipeline(name, arguments, context), self._effects.async_)

    def call_sync(self, name: str, arguments: Any = None, *, context: CallContext | None = None) -> Envelope:
        """The same pipeline for synchronous callers; sync handlers run without an event loop."""
        return drive(self._pipeline(name, arguments, context), self._effects.sync)

    def plan(self, tool: Tool) -> tuple[Stage, ...]:
        """The stages this tool's calls run (`stages.plan`), worked out on its first call."""
        return self.route(tool).stages

    def route(self, tool: Tool) -> Route:
        """The tool, the stages its calls run and the breaker its attempts answer to: worked out on its first
        call, kept while the toolset holds this very tool."""
        found = self._routes.get(tool.name)
        if found is None or found.tool is not tool:
            stages = plan(self.stages, tool, guarded=self._env.loop_guard is not None)
            found = self._routes[tool.name] = Route(tool, stages, self.breaker(tool.upstream or tool.name))
        return found

    def reconcile(self, key: str, outcome: str = "done", *, result: Any = None, note: str | None = None) -> Intent:
        """Settle a write whose outcome was unknown, after a person checked: `done` (repeats replay `result`)
        or `not_done` (released; the call may be made again). Resolves the linked stop records too."""
        if outcome not in ("done", "not_done"):
            raise ValueError(f"outcome must be 'done' or 'not_done', got {outcome!r}")
        return self.journal.reconcile(key, "done" if outcome == "done" else "not_done", result=result, note=note)

    async def wait_for_approval(
        self, approval: str | Envelope, *, timeout_s: float = 300.0, poll_s: float = 0.25
    ) -> ApprovalRequest:
        """Wait until a person decides a gated call's request (its id, or the envelope that named it), or
        `timeout_s` passes; then make the same call again: approved runs it exactly once."""
        return await await_decision(self.store, _approval_id(approval), timeout_s=timeout_s, poll_s=poll_s)

    def wait_for_approval_sync(
        self, approval: str | Envelope, *, timeout_s: float = 300.0, poll_s: float = 0.25
    ) -> ApprovalRequest:
        """`wait_for_approval` for synchronous callers."""
        return wait_for_decision(self.store, _approval_id(approval), timeout_s=timeout_s, poll_s=poll_s)

    def run_state(self, run_id: str, now: float) -> RunState:
        """The budget state of one run (`CallContext.run_id`); the oldest runs are forgotten past 10,000."""
        runs = self._runs
        state = runs.get(run_id)
        if state is None:
            if len(runs) >= _MAX_RUNS:
                del runs[next(iter(runs))]
            state = runs[run_id] = RunState(now)
        return state

    # --- one call ---------------------------------------------------------------------------------------------

    def _pipeline(self, name: str, arguments: Any, context: CallContext | None) -> Pipeline:
        """The pipeline of one call (`stages.run`, traced when the runner has spans), given its state: its tool,
        its context (a call id and attempt 1 filled in), what was sent, its route."""
        env = self._env
        tool = env.toolset.get(name)
        ctx = fresh_context(self._call_ids()) if context is None else self._context(context)
        scope = ctx.run_id or ctx.conversation_id or ctx.session_id  # the loop guard's memory
        route = self._routes.get(name)
        if route is None or route.tool is not tool:
            route = self.route(tool)
        state = CallState(tool, ctx, arguments, env.clock.monotonic(), route.stages, route.breaker, scope)
        return run(env, state) if self._spans is None else self._traced(env, state)

    def _context(self, context: CallContext) -> CallContext:
        """The caller's context with a call id and attempt 1 filled in when missing."""
        if not isinstance(context, CallContext):
            raise TypeError(f"context must be a toolproof.CallContext, not {type(context).__name__}")
        if context.call_id is None or context.attempt == 0:
            return with_call(context, context.call_id or self._call_ids())
        return context

    def _traced(self, env: Env, state: CallState) -> Pipeline:
        """The pipeline inside an `execute_tool` span, current while it runs (handler spans nest under it)."""
        spans = self._spans
        assert spans is not None
        span, token = spans.start(state.tool, state.context.call_id or "")
        try:
            envelope = yield from run(env, state)
        except BaseException as exc:  # includes GeneratorExit: the driver closes an abandoned pipeline
            spans.end(span, token, None, exc)
            raise
        spans.end(span, token, envelope)
        return envelope


def _approval_id(approval: str | Envelope) -> str:
    """The request id, given as such or in the envelope of the gated call."""
    if isinstance(approval, str):
        return approval
    found = approval.meta.extra.get("approval_id")
    if not isinstance(found, str):
        raise ValueError("this envelope is not the answer to a call waiting for approval")
    return found
