"""The two drivers of the pipeline: they perform the effects a call's stages yield, and nothing else.

`Effects.sync` performs them on the caller's thread (a sync handler on the sync path never touches an event
loop); `Effects.async_` awaits them and keeps blocking work off the event loop: a sync handler and any `Io`
without an async form run on a worker thread. The loop over the stages is `stages.run`, written once; the
loop over effects is `stores.steps.drive` / `adrive`, also written once.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future
from typing import Any

from ..stores._steps import Io, aperform_io, perform_io
from ._effects import Clock, Dispatch, Effect, Outcome, Sleep

__all__ = ["Effects", "in_thread"]

Args = tuple[tuple[Any, ...], Mapping[str, Any]]


class Effects:
    """How one runner performs effects: here and now (`sync`) or awaited (`async_`), on the runner's clock."""

    __slots__ = ("clock",)

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def sync(self, effect: Effect) -> Any:
        """One effect, here and now: its result (an `Outcome`, None, what the store call returned)."""
        if type(effect) is Dispatch:
            return dispatch_sync(effect, self.clock)
        if type(effect) is Sleep:
            self.clock.sleep(effect.seconds)
            return None
        assert isinstance(effect, Io)
        return perform_io(effect)

    async def async_(self, effect: Effect) -> Any:
        """One effect, awaited: a sync handler, and a store call without an async form, on a worker thread."""
        if type(effect) is Dispatch:
            return await dispatch_async(effect, self.clock)
        if type(effect) is Sleep:
            await self.clock.async_sleep(effect.seconds)
            return None
        assert isinstance(effect, Io)
        return await aperform_io(effect)


def dispatch_sync(effect: Dispatch, clock: Clock) -> Outcome:
    """Run the handler on this thread (async handlers in their own loop; a time limit needs a thread).

    A sync handler whose tool has no `timeout_s` runs right here, on the caller's thread: no thread could stop
    it anyway (the call's wall budget then bounds it only between attempts), and it may hold thread-bound
    objects (a sqlite3 connection). Everything else gives up waiting at `effect.timeout_s`.
    """
    tool, timeout, bound = effect.tool, effect.timeout_s, (effect.args, effect.kwargs)
    if not tool.is_async and (tool.timeout_s is None or timeout is None):
        return run_here(tool.handler, bound, clock)
    start = clock.monotonic()
    future: Future[Any] | None = None
    try:
        if tool.is_async:
            future = _run_coroutine_blocking(tool.handler(*effect.args, **effect.kwargs), timeout)
        else:
            future = in_thread(f"toolproof-{tool.name}", run_here, (tool.handler, bound, clock))
        value = future.result(timeout)
    except Exception as exc:
        return Outcome(None, exc, clock.monotonic() - start, None if future is None or future.done() else future)
    if not tool.is_async:  # `run_here`'s own Outcome, from the handler's thread
        finished: Outcome = value
        return finished
    return Outcome(value, None, clock.monotonic() - start)


def run_here(handler: Callable[..., Any], bound: Args, clock: Clock) -> Outcome:
    """A sync handler called on this thread with its (args, kwargs): what it returned or raised (past `Exception`
    it propagates). The handler's arguments are never mixed with a helper's own parameters, so a tool may
    name its parameters anything (`name`, `fn`, `self`...)."""
    args, kwargs = bound
    start = clock.monotonic()
    try:
        value = handler(*args, **kwargs)
    except Exception as exc:
        return Outcome(None, exc, clock.monotonic() - start)
    return Outcome(value, None, clock.monotonic() - start)


async def dispatch_async(effect: Dispatch, clock: Clock) -> Outcome:
    """Await the handler under its time limit; a sync handler runs on a worker thread, never on the loop: its
    own daemon thread under its tool's `timeout_s` (the caller stops waiting; an abandoned handler never holds
    a pool thread), else the loop's pool (one hop: as on the sync path, a sync handler without `timeout_s` is
    bounded by the call's wall budget only between attempts). An async handler is abandoned at its tool's
    `timeout_s` (`_bounded`: its own task, whatever it does with the cancellation), and cancelled in place at
    the call's wall budget when its tool has no `timeout_s` (no task per call; one that swallows the
    cancellation runs on: declare `timeout_s` to have it abandoned).

    A sync handler's own exceptions (StopIteration included, which a Future cannot carry) come back inside its
    `Outcome`, caught on its thread."""
    tool = effect.tool
    start = clock.monotonic()
    timeout = effect.timeout_s
    bound = (effect.args, effect.kwargs)
    try:
        if tool.is_async:
            coro = tool.handler(*effect.args, **effect.kwargs)
            if timeout is None:
                value = await coro
            elif tool.timeout_s is None:  # the call's wall budget alone: cancelled in place, no task of its own
                async with asyncio.timeout(timeout):
                    value = await coro
            else:
                value = await _bounded(coro, timeout)
        elif timeout is not None and tool.timeout_s is not None:
            future = in_thread(f"toolproof-{tool.name}", run_here, (tool.handler, bound, clock))
            done, _ = await asyncio.wait((asyncio.wrap_future(future),), timeout=timeout)
            if not done:
                return Outcome(None, TimeoutError(f"no answer within {timeout:g} s"), clock.monotonic() - start,
                               future)
            finished: Outcome = future.result()
            return finished
        else:
            return await asyncio.to_thread(run_here, tool.handler, bound, clock)
    except Exception as exc:
        return Outcome(None, exc, clock.monotonic() - start)
    return Outcome(value, None, clock.monotonic() - start)


async def _bounded(coro: Coroutine[Any, Any, Any], timeout_s: float) -> Any:
    """Await a handler for at most `timeout_s`, then cancel it and stop waiting.

    Unlike `asyncio.wait_for`, the caller never waits for the cancellation to land: a handler that swallows
    `CancelledError` keeps running on the loop, abandoned (its result is dropped), and the call goes on.
    A handler's KeyboardInterrupt or SystemExit has already been raised out of the event loop by asyncio
    (from the handler's own task); raising it again here, when this call's task next resumes, would hit
    whatever unrelated call the loop runs next, so this call ends cancelled instead.
    """
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout_s)
    except BaseException:  # the caller was cancelled: so is the handler
        task.cancel()
        raise
    if done:
        if not task.cancelled() and isinstance(task.exception(), KeyboardInterrupt | SystemExit):
            raise asyncio.CancelledError(f"the handler raised {type(task.exception()).__name__}")
        return task.result()
    task.cancel()
    task.add_done_callback(_drop_outcome)
    # One turn of the loop, not a wait: the handler sees its cancellation now (a connection marks itself
    # suspect, say) rather than after whatever the caller sends next.
    await asyncio.sleep(0)
    raise TimeoutError(f"no answer within {timeout_s:g} s")


def _drop_outcome(task: asyncio.Future[Any]) -> None:
    """An abandoned handler's late result or error is dropped (retrieved, so asyncio does not log it)."""
    if not task.cancelled():
        task.exception()


def in_thread(label: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Future[Any]:
    """Run `fn(*args)` on its own daemon thread so that the caller can stop waiting for it.

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
            future.set_result(context.run(fn, *args))
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=target, name=label, daemon=True).start()
    return future


def _run_coroutine_blocking(coro: Any, timeout_s: float | None) -> Future[Any]:
    """Run an async handler from the sync path (not from inside a running event loop): its future, done unless
    it runs on under a time limit.

    Under a time limit it runs in its own loop on a daemon thread: the caller stops waiting at the limit even
    when the handler swallows its cancellation or blocks its loop.
    """
    future: Future[Any] = Future()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        future.set_exception(RuntimeError(
            "call_sync() on an async tool from inside an event loop: use `await runner.call()`"))
        return future
    if timeout_s is not None:
        async def bounded() -> Any:
            return await _bounded(coro, timeout_s)

        return in_thread("toolproof-async-handler", asyncio.run, (bounded(),))
    try:
        future.set_result(asyncio.run(coro))
    except Exception as exc:
        future.set_exception(exc)
    return future
