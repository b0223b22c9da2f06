"""What the pipeline asks its driver to do (effects), and what the driver sends back.

The pipeline never performs I/O: it yields one of these and gets the result back from `send()`. The sync
driver performs them on the caller's thread, the async driver awaits them (and keeps blocking work off the
event loop). Effects and outcomes are NamedTuples: immutable like frozen dataclasses, several times
cheaper to build (one of each per call, on the hot path).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple, TypeAlias

from ..contract.envelope import Envelope
from ..contract.tool import Tool


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


class Io(NamedTuple):
    """A store call: `sync()` on the sync path; on the async path `async_()` when given, else `sync()` on a
    worker thread (a blocking call never runs on the event loop). Sent back: what the call returned."""

    sync: Callable[[], Any]
    async_: Callable[[], Awaitable[Any]] | None = None


Effect: TypeAlias = Dispatch | Sleep | Io


class Outcome(NamedTuple):
    """What a dispatch produced: a value, or the exception the handler raised, and how long it took."""

    value: Any
    error: Exception | None
    elapsed_s: float


#: A stage, or the whole pipeline: yields effects, is sent their results, returns its answer.
Steps: TypeAlias = Generator[Effect, Any, Envelope | None]
Pipeline: TypeAlias = Generator[Effect, Any, Envelope]


@dataclass(frozen=True, slots=True)
class Clock:
    """Time for the runner, injectable so that policy tests run in milliseconds."""

    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


SYSTEM_CLOCK: Final = Clock()
