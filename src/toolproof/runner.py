"""The one pipeline: validate -> (key -> journal) -> dispatch -> classify -> envelope.

The pipeline is written once, as a generator that yields *effects* (`Dispatch`, `Sleep`, `Io`) and gets
their outcomes back. Two small drivers run it: `Runner.call` awaits effects on the event loop,
`Runner.call_sync` performs them directly, so a sync handler on the sync path never touches an event loop.
Policy lives in the generator; I/O lives in the drivers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from .classify import classify_exception
from .context import CallContext, new_call_id
from .envelope import Envelope, Meta
from .errors import InvalidArgument, ToolError
from .intent import Intent
from .journal import Claim, Journal, in_flight_conflict, replay_envelope
from .keys import KeyParts, key_parts_for
from .stores import Store, open_store
from .tool import Tool
from .toolset import Toolset

# --- effects: what the pipeline asks its driver to do -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Run the tool's handler with these arguments (under the tool's timeout)."""

    tool: Tool
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait this many seconds (the driver uses the runner's clock)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Io:
    """Run a piece of I/O (a store call): `sync()` on the sync path, `async_()` when given on the async path."""

    sync: Callable[[], Any]
    async_: Callable[[], Awaitable[Any]] | None = None


Effect: TypeAlias = Dispatch | Sleep | Io


@dataclass(frozen=True, slots=True)
class Outcome:
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


class Runner:
    """Runs tool calls through the contract and returns an `Envelope` for every call.

    `Runner(toolset)` keeps its state in memory and writes no file; `store=` (a `Store` or a URL such as
    `sqlite:///toolproof.sqlite3` or `postgresql://...`) or `TOOLPROOF_STORE` makes it durable.
    """

    def __init__(self, toolset: Toolset, *, store: Store | str | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        if not isinstance(toolset, Toolset):
            raise TypeError(f"Runner needs a toolproof.Toolset, got {type(toolset).__name__}")
        self.toolset = toolset
        self.clock = clock
        self.store = store if isinstance(store, Store) else open_store(store)
        # --- journal (issue 4): exactly-once bookkeeping for writes; replace to tune wait/lease ---
        self.journal = Journal(self.store)

    def close(self) -> None:
        """Flush and release the store."""
        self.store.close()

    # --- public entry points ------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Any = None, *, context: CallContext | None = None) -> Envelope:
        """Validate and run one call; every outcome is an `Envelope`. Unknown tools raise `UnknownTool`."""
        tool = self.toolset.get(name)
        pipeline = self._pipeline(tool, arguments, context)
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

    def call_sync(self, name: str, arguments: Any = None, *, context: CallContext | None = None) -> Envelope:
        """The same pipeline for synchronous callers; sync handlers run without an event loop."""
        tool = self.toolset.get(name)
        pipeline = self._pipeline(tool, arguments, context)
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

    def _pipeline(self, tool: Tool, arguments: Any, context: CallContext | None) -> Pipeline:
        ctx = context if context is not None else CallContext()
        call_id = ctx.call_id
        if call_id is None:
            call_id = new_call_id()
            ctx = ctx.with_updates(call_id=call_id)
        parts: KeyParts | None = None
        try:
            args = tool.parse_arguments(arguments)
            # --- journal (issue 4): the key is ours, never the model's; the handler gets it in its context ---
            if tool.effect == "write":
                parts = key_parts_for(tool, args, ctx)
                ctx = ctx.with_updates(idempotency_key=parts.key)
            call_args, call_kwargs = tool.bind(args, ctx)
        except InvalidArgument as exc:
            return Envelope.failure(exc, Meta(tool.name, call_id, tool.schema_version, 0))
        # --- journal (issue 4): claim the intent before dispatch (reads never touch the journal) ---
        intent: Intent | None = None
        if parts is not None:
            intent = self.journal.new_intent(tool, args, ctx, parts)
            claim = yield from self._journal_claim(intent)
            if claim.kind == "replay":
                return replay_envelope(claim.intent, tool, call_id)
            if claim.kind != "proceed":
                assert claim.error is not None
                return Envelope.failure(claim.error, Meta(tool.name, call_id, tool.schema_version, 0, parts.key))
        # --- end journal ---
        outcome: Outcome = yield Dispatch(tool, call_args, call_kwargs)
        meta = Meta(tool.name, call_id, tool.schema_version, 1)
        if outcome.error is None:
            try:
                envelope = Envelope(True, meta, tool.check_output(outcome.value))
            except ToolError as exc:
                envelope = Envelope.failure(exc, meta)
        else:
            error = classify_exception(outcome.error, effect=tool.effect, dispatched=True)
            envelope = Envelope.failure(error, meta)
        # --- journal (issue 4): record the outcome (replayed to repeats) or release the intent ---
        if intent is not None:
            journal, claimed = self.journal, intent
            envelope = yield Io(lambda: journal.record(claimed, tool, envelope),
                                lambda: journal.arecord(claimed, tool, envelope))
        # --- end journal ---
        return envelope

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
                value = _run_coroutine_blocking(tool.handler(*effect.args, **effect.kwargs), tool.timeout_s)
            else:
                value = tool.handler(*effect.args, **effect.kwargs)
        except Exception as exc:
            return Outcome(error=exc, elapsed_s=self.clock.monotonic() - start)
        return Outcome(value=value, elapsed_s=self.clock.monotonic() - start)

    async def _dispatch_async(self, effect: Dispatch) -> Outcome:
        tool = effect.tool
        start = self.clock.monotonic()
        try:
            if tool.is_async:
                coro = tool.handler(*effect.args, **effect.kwargs)
                value = await (asyncio.wait_for(coro, tool.timeout_s) if tool.timeout_s else coro)
            elif tool.timeout_s:
                value = await asyncio.wait_for(
                    asyncio.to_thread(tool.handler, *effect.args, **effect.kwargs), tool.timeout_s
                )
            else:
                value = tool.handler(*effect.args, **effect.kwargs)
        except Exception as exc:
            return Outcome(error=exc, elapsed_s=self.clock.monotonic() - start)
        return Outcome(value=value, elapsed_s=self.clock.monotonic() - start)


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
