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

    # --- the pipeline ---------------------------------------------------------------------------------------

    def _pipeline(self, tool: Tool, arguments: Any, context: CallContext | None) -> Pipeline:
        ctx = context if context is not None else CallContext()
        call_id = ctx.call_id
        if call_id is None:
            call_id = new_call_id()
            ctx = ctx.with_updates(call_id=call_id)
        try:
            args = tool.parse_arguments(arguments)
            call_args, call_kwargs = tool.bind(args, ctx)
        except InvalidArgument as exc:
            return Envelope.failure(exc, Meta(tool.name, call_id, tool.schema_version, 0))
        outcome: Outcome = yield Dispatch(tool, call_args, call_kwargs)
        meta = Meta(tool.name, call_id, tool.schema_version, 1)
        if outcome.error is None:
            try:
                result = tool.check_output(outcome.value)
            except ToolError as exc:
                return Envelope.failure(exc, meta)
            return Envelope(True, meta, result)
        error = classify_exception(outcome.error, effect=tool.effect, dispatched=True)
        return Envelope.failure(error, meta)

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
