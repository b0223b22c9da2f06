"""The two drivers of the pipeline: they run a call's stages and perform the I/O the stages ask for.

`drive_sync` performs it on the caller's thread (a sync handler on the sync path never touches an event
loop); `drive_async` awaits it and keeps blocking work off the event loop: a sync handler and any `Io`
without an async form run on a worker thread. Both run the same loop over the call's plan (a `Then`'s
effect performed and its result handed on; steps driven to what they return), and both close a stage's
steps the same way when they stop early.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Coroutine, Generator, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Final

from ..contract.envelope import Envelope
from ..contract.tool import Tool
from .effects import Clock, Dispatch, Effect, Io, Outcome, Sleep
from .stages import (
    READ_PLAN,
    READ_PLAN_UNGUARDED,
    Step,
    Then,
    admit,
    attempted,
    begin,
    envelope_of,
    guard,
    interrupted,
    runs_here,
    validate,
)
from .state import CallState

if TYPE_CHECKING:
    from .runner import Runner

#: `Outcome(...)` without the NamedTuple's Python-level `__new__` (0.18 -> 0.08 µs, once per attempt).
_new_tuple: Final = tuple.__new__


def drive_sync(rt: Runner, s: CallState) -> Envelope:
    """Run the call's stages to its envelope, performing each effect here and now."""
    stages = s.stages
    if stages is READ_PLAN or stages is READ_PLAN_UNGUARDED:
        return drive_read_sync(rt, s, guarded=stages is READ_PLAN)
    for stage in stages:
        step = stage(rt, s)
        if step is not None:
            envelope = step_sync(rt, s, step)
            if envelope is not None:
                return envelope
    return s.envelope or envelope_of(s)


def drive_read_sync(rt: Runner, s: CallState, *, guarded: bool) -> Envelope:
    """`drive_sync` unrolled for a read's plan (guard, validate, dispatch) whose handler runs right here: the
    same stages and steps, with the first attempt's handler called in line rather than through `Then` and
    `Dispatch`; what follows anything but a first success (a retry, a refusal) goes on through `step_sync`.
    Earns its place: 75,340 -> 65,089 instructions per default call of the runner benchmark, with the smaller
    cuts that came with it (valgrind callgrind; see benchmarks/bench_runner.py).
    """
    if guarded and s.scope is not None:  # the guard hands on a call with no run or conversation
        step = guard(rt, s)
        if step is not None and (envelope := step_sync(rt, s, step)) is not None:
            return envelope
    step = validate(rt, s)
    if step is not None and (envelope := step_sync(rt, s, step)) is not None:
        return envelope
    begin(rt, s)
    step = admit(rt, s)
    if step is None:
        try:
            outcome = run_here(s.tool, s.bound, rt.clock)
        except BaseException as exc:  # past Exception: as `stopped` does (a read has no write to settle)
            interrupted(rt, s, exc)
            raise
        step = attempted(rt, s, outcome)
    if step is not None and (envelope := step_sync(rt, s, step)) is not None:
        return envelope
    return s.envelope or envelope_of(s)


def step_sync(rt: Runner, s: CallState, step: Step) -> Envelope | None:
    """Drive one stage's step until it hands the call on (None) or ends it (the envelope)."""
    while step is not None:
        if isinstance(step, Envelope):
            return step
        if isinstance(step, Then):
            effect = step.effect
            try:
                # a Dispatch is the common case: without perform_sync's call
                result = dispatch_sync(effect, rt.clock) if type(effect) is Dispatch else perform_sync(effect, rt.clock)
            except BaseException as exc:
                stopped(rt, s, effect, exc)
                raise
            step = step.next(rt, s, result)
        else:
            step = run_steps_sync(step, rt.clock)
    return None


async def drive_async(rt: Runner, s: CallState) -> Envelope:
    """Run the call's stages to its envelope on the event loop; nothing that blocks runs on the loop itself."""
    for stage in s.stages:
        step = stage(rt, s)
        while step is not None:
            if isinstance(step, Envelope):
                return step
            if type(step) is Then:
                try:
                    result = await perform_async(step.effect, rt.clock)
                except BaseException as exc:
                    stopped(rt, s, step.effect, exc)
                    raise
                step = step.next(rt, s, result)
            else:
                step = await run_steps_async(step, rt.clock)  # type: ignore[arg-type]
    return s.envelope or envelope_of(s)


def stopped(rt: Runner, s: CallState, effect: Effect, exc: BaseException) -> None:
    """A handler stopped past `Exception` (an interrupt, a cancellation): its write is settled before the raise."""
    if type(effect) is Dispatch:
        interrupted(rt, s, exc)


def run_steps_sync(steps: Generator[Effect, Any, Any], clock: Clock) -> Any:
    """Drive a stage's steps (or a whole traced pipeline) to what they return, performing each effect now."""
    sent: Any = None
    try:
        while True:
            effect = steps.send(sent)
            try:
                sent = perform_sync(effect, clock)
            except BaseException as exc:
                if type(effect) is Dispatch:  # past Exception: the steps settle what they must, then re-raise
                    steps.throw(exc)
                raise
    except StopIteration as done:
        return done.value
    finally:
        steps.close()  # stopped early (an exception): the steps' own cleanup runs here


async def run_steps_async(steps: Generator[Effect, Any, Any], clock: Clock) -> Any:
    """`run_steps_sync` on the event loop."""
    sent: Any = None
    try:
        while True:
            effect = steps.send(sent)
            try:
                sent = await perform_async(effect, clock)
            except BaseException as exc:
                if type(effect) is Dispatch:
                    steps.throw(exc)
                raise
    except StopIteration as done:
        return done.value
    finally:
        steps.close()  # cancelled mid-call: the steps' cleanup runs here, in this context


def perform_sync(effect: Effect, clock: Clock) -> Any:
    """One effect, here and now: its result (an `Outcome`, None, what the store call returned)."""
    if type(effect) is Dispatch:
        return dispatch_sync(effect, clock)
    if type(effect) is Sleep:
        clock.sleep(effect.seconds)
        return None
    assert isinstance(effect, Io)
    return effect.sync()


async def perform_async(effect: Effect, clock: Clock) -> Any:
    """One effect, awaited: a sync handler, and a store call without an async form, on a worker thread."""
    if type(effect) is Dispatch:
        return await dispatch_async(effect, clock)
    if type(effect) is Sleep:
        await clock.async_sleep(effect.seconds)
        return None
    assert isinstance(effect, Io)
    return await (effect.async_() if effect.async_ is not None else asyncio.to_thread(effect.sync))


def dispatch_sync(effect: Dispatch, clock: Clock) -> Outcome:
    """Run the handler on this thread (async handlers in their own loop; a time limit needs a thread).

    A sync handler whose tool has no `timeout_s` runs right here, on the caller's thread (`runs_here`).
    Everything else gives up waiting at `effect.timeout_s`.
    """
    tool = effect.tool
    timeout = effect.timeout_s
    if runs_here(tool) or (not tool.is_async and timeout is None):
        return run_here(tool, (effect.args, effect.kwargs), clock)
    start = clock.monotonic()
    try:
        if tool.is_async:
            value = _run_coroutine_blocking(tool.handler(*effect.args, **effect.kwargs), timeout)
        else:
            value = _in_thread(tool.name, tool.handler, *effect.args, **effect.kwargs).result(timeout)
    except Exception as exc:
        return _new_tuple(Outcome, (None, exc, clock.monotonic() - start))
    return _new_tuple(Outcome, (value, None, clock.monotonic() - start))


def run_here(tool: Tool, bound: tuple[tuple[Any, ...], Mapping[str, Any]], clock: Clock) -> Outcome:
    """A sync handler called on this thread with its (args, kwargs): what it returned or raised (past `Exception`
    it propagates)."""
    args, kwargs = bound  # taken whole: `run_here(tool, *bound, clock)` cost 900 more instructions (callgrind)
    start = clock.monotonic()
    try:
        value = tool.handler(*args, **kwargs)
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
