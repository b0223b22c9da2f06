"""What the pipeline asks its driver to do (effects), and what the driver sends back.

The pipeline never performs I/O: it yields one of these and is sent the result (or thrown what performing it
raised). `drivers.py` performs them, on the caller's thread or awaited on the event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Final, NamedTuple, TypeAlias

from ..contract._envelope import Envelope
from ..contract._tool import Tool
from ..stores._steps import Io

__all__ = ["SYSTEM_CLOCK", "Clock", "Dispatch", "Effect", "Io", "Outcome", "Pipeline", "Sleep", "Steps"]


class Dispatch(NamedTuple):
    """Run the tool's handler with these arguments, for at most `timeout_s` seconds when given.

    Sent back: an `Outcome`.
    """

    tool: Tool
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    timeout_s: float | None = None


class Sleep(NamedTuple):
    """Wait this many seconds, on the runner's clock. Sent back: None."""

    seconds: float


Effect: TypeAlias = Dispatch | Sleep | Io


class Outcome(NamedTuple):
    """What a dispatch produced: a value, or the exception the handler raised, and how long it took; after a
    time limit, the attempt still running on its thread (`running`), which a verify waits out before it may
    say "not done" (a second dispatch must never race it)."""

    value: Any
    error: Exception | None
    elapsed_s: float
    running: Future[Any] | None = None


#: A stage's steps: yields effects, is sent their results, returns the envelope that ends the call or None.
Steps: TypeAlias = Generator[Effect, Any, Envelope | None]
#: The whole pipeline of one call: it always ends in an envelope.
Pipeline: TypeAlias = Generator[Effect, Any, Envelope]


@dataclass(frozen=True, slots=True)
class Clock:
    """Time for the runner, injectable so that policy tests run in milliseconds: `monotonic` for budgets and
    backoff, `time` (wall clock, epoch seconds) for journal leases, approval expiry and record times."""

    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    time: Callable[[], float] = time.time


SYSTEM_CLOCK: Final = Clock()
