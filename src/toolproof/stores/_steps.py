"""Steps: code that needs I/O written once, as a generator of effects, and the two drivers that perform them.

A function that must run both on a caller's thread and on an event loop (a journal claim, an approval
lookup, a whole tool call) yields what it needs done (an effect) and is sent the result, or thrown the
exception, back. It never performs I/O itself, so it has no sync/async twin: `drive` performs the effects
here and now, `adrive` awaits them. The pipeline's own effects (dispatching a handler, sleeping) add to
`Io`, the one effect this floor knows: a blocking call with an optional async form.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from typing import Any, NamedTuple, TypeAlias, TypeVar

__all__ = ["Io", "IoSteps", "adrive", "aperform_io", "drive", "perform_io"]

_T = TypeVar("_T")
_E = TypeVar("_E")


class Io(NamedTuple):
    """A blocking call: `sync(*args)` on the sync path; on the async path `async_(*args)` when given, else
    `sync(*args)` on a worker thread (a blocking call never runs on the event loop). Sent back: its result."""

    sync: Callable[..., Any]
    async_: Callable[..., Awaitable[Any]] | None = None
    args: tuple[Any, ...] = ()


#: Steps that only need blocking calls (the journal's, the approval gate's): they return a `_T`.
IoSteps: TypeAlias = Generator[Io, Any, _T]


def perform_io(effect: Io) -> Any:
    """An `Io`, here and now."""
    return effect.sync(*effect.args)


async def aperform_io(effect: Io) -> Any:
    """An `Io`, awaited: its async form, else its blocking form on a worker thread."""
    if effect.async_ is not None:
        return await effect.async_(*effect.args)
    return await asyncio.to_thread(effect.sync, *effect.args)


def drive(steps: Generator[_E, Any, _T], perform: Callable[[_E], Any]) -> _T:
    """Run steps to what they return, performing each effect now: its result is sent back, or what it raised
    (BaseException included) is thrown in, so the steps' own `try` decides (a dispatch settles its write)."""
    sent: Any = None
    failure: BaseException | None = None
    try:
        while True:
            effect = steps.send(sent) if failure is None else steps.throw(failure)
            try:
                sent, failure = perform(effect), None
            except BaseException as exc:
                sent, failure = None, exc
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        steps.close()


async def adrive(steps: Generator[_E, Any, _T], perform: Callable[[_E], Awaitable[Any]]) -> _T:
    """`drive` on the event loop: each effect awaited (a cancellation is thrown in like any other raise)."""
    sent: Any = None
    failure: BaseException | None = None
    try:
        while True:
            effect = steps.send(sent) if failure is None else steps.throw(failure)
            try:
                sent, failure = await perform(effect), None
            except BaseException as exc:
                sent, failure = None, exc
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        steps.close()
