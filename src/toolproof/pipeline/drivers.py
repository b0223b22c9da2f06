"""The two drivers of the pipeline: they perform the effects it yields and send the results back.

`drive_sync` performs them on the caller's thread (a sync handler on the sync path never touches an event
loop); `drive_async` awaits them and keeps blocking work off the event loop: a sync handler and any `Io`
without an async form run on a worker thread. Both close the pipeline the same way when they stop early.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, Final

from ..contract.envelope import Envelope
from .effects import Clock, Dispatch, Io, Outcome, Pipeline, Sleep

#: `Outcome(...)` without the NamedTuple's Python-level `__new__` (0.18 -> 0.08 µs, once per attempt).
_new_tuple: Final = tuple.__new__


def drive_sync(pipeline: Pipeline, clock: Clock) -> Envelope:
    """Run the pipeline to its envelope, performing each effect here and now."""
    sent: Any = None
    try:
        while True:
            effect = pipeline.send(sent)
            if type(effect) is Dispatch:
                try:
                    sent = dispatch_sync(effect, clock)
                except BaseException as exc:  # past Exception: the pipeline settles what it must, then re-raises
                    pipeline.throw(exc)
                    raise
            elif type(effect) is Sleep:
                clock.sleep(effect.seconds)
                sent = None
            else:
                assert isinstance(effect, Io)
                sent = effect.sync()
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        pipeline.close()  # stopped early (an exception): the pipeline's own cleanup runs here


async def drive_async(pipeline: Pipeline, clock: Clock) -> Envelope:
    """Run the pipeline to its envelope on the event loop; nothing that blocks runs on the loop itself."""
    sent: Any = None
    try:
        while True:
            effect = pipeline.send(sent)
            if type(effect) is Dispatch:
                try:
                    sent = await dispatch_async(effect, clock)
                except BaseException as exc:
                    pipeline.throw(exc)
                    raise
            elif type(effect) is Sleep:
                await clock.async_sleep(effect.seconds)
                sent = None
            else:
                assert isinstance(effect, Io)
                sent = await (effect.async_() if effect.async_ is not None else asyncio.to_thread(effect.sync))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        pipeline.close()  # cancelled mid-call: the pipeline's cleanup runs here, in this context


def dispatch_sync(effect: Dispatch, clock: Clock) -> Outcome:
    """Run the handler on this thread (async handlers in their own loop; a time limit needs a thread).

    A sync handler whose tool has no `timeout_s` runs right here, on the caller's thread: no thread could stop
    it anyway, so the call's wall budget bounds it only between attempts. Everything else gives up waiting
    at `effect.timeout_s`.
    """
    tool = effect.tool
    start = clock.monotonic()
    timeout = effect.timeout_s
    try:
        if tool.is_async:
            value = _run_coroutine_blocking(tool.handler(*effect.args, **effect.kwargs), timeout)
        elif timeout is not None and tool.timeout_s is not None:
            value = _in_thread(tool.name, tool.handler, *effect.args, **effect.kwargs).result(timeout)
        else:
            value = tool.handler(*effect.args, **effect.kwargs)
    except Exception as exc:
        return _new_tuple(Outcome, (None, exc, clock.monotonic() - start))
    return _new_tuple(Outcome, (value, None, clock.monotonic() - start))


async def dispatch_async(effect: Dispatch, clock: Clock) -> Outcome:
    """Await the handler under its time limit; a sync handler runs on a worker thread, never on the loop."""
    tool = effect.tool
    start = clock.monotonic()
    timeout = effect.timeout_s
    try:
        if tool.is_async:
            coro = tool.handler(*effect.args, **effect.kwargs)
            value = await (coro if timeout is None else _bounded(coro, timeout))
        elif timeout is not None:
            future = _in_thread(tool.name, tool.handler, *effect.args, **effect.kwargs)
            value = await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        else:
            value = await asyncio.to_thread(tool.handler, *effect.args, **effect.kwargs)
    except Exception as exc:
        return _new_tuple(Outcome, (None, exc, clock.monotonic() - start))
    return _new_tuple(Outcome, (value, None, clock.monotonic() - start))


async def _bounded(coro: Coroutine[Any, Any, Any], timeout_s: float) -> Any:
    """Await a handler for at most `timeout_s`, then cancel it and stop waiting.

    Unlike `asyncio.wait_for`, the caller never waits for the cancellation to land: a handler that swallows
    `CancelledError` keeps running on the loop, abandoned (its result is dropped), and the call goes on.
    """
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout_s)
    except BaseException:  # the caller was cancelled: so is the handler
        task.cancel()
        raise
    if done:
        return task.result()
    task.cancel()
    task.add_done_callback(_drop_outcome)
    raise TimeoutError(f"no answer within {timeout_s:g} s")


def _drop_outcome(task: asyncio.Future[Any]) -> None:
    """An abandoned handler's late result or error is dropped (retrieved, so asyncio does not log it)."""
    if not task.cancelled():
        task.exception()


def _in_thread(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """Run `fn` on its own daemon thread so that the caller can stop waiting for it.

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
            future.set_result(context.run(fn, *args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=target, name=f"toolproof-{name}", daemon=True).start()
    return future


def _run_coroutine_blocking(coro: Any, timeout_s: float | None) -> Any:
    """Run an async handler from the sync path (not from inside a running event loop).

    Under a time limit it runs in its own loop on a daemon thread: the caller stops waiting at the limit even
    when the handler swallows its cancellation or blocks its loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise RuntimeError("call_sync() on an async tool from inside an event loop: use `await runner.call()`")
    if timeout_s is None:
        return asyncio.run(coro)

    async def bounded() -> Any:
        return await _bounded(coro, timeout_s)

    return _in_thread("async-handler", asyncio.run, bounded()).result(timeout_s)
