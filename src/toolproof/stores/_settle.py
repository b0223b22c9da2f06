"""Deferred settlements: a finished intent's record is written by a background thread, in batches.

Why: the claim (before dispatch) is what prevents a duplicate and stays synchronous. The settlement after
dispatch only lets repeats replay the result; taking it off the caller's path halves the statements a
journaled write waits for. Reads of the journal in the same process flush first (read-your-writes);
another process sees the settlement a few milliseconds later and, meanwhile, waits as for any in-flight
intent. A settlement lost with its process leaves the intent `in_flight` until its lease ends, then
`unknown`: never re-run. `close()` and interpreter exit flush what is pending.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("toolproof.journal")


def _close_at_exit(ref: weakref.ref[SettleQueue]) -> None:
    queue = ref()
    if queue is not None:
        queue.close()


class SettleQueue:
    """A FIFO of settlement rows written by one daemon thread through `write_batch(rows)`."""

    def __init__(self, write_batch: Callable[[Sequence[tuple[Any, ...]]], None], *, max_batch: int = 256) -> None:
        self._write_batch = write_batch
        self._max_batch = max_batch
        self._cond = threading.Condition()
        self._pending: list[tuple[Any, ...]] = []
        self._queued = 0
        self._written = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        atexit.register(_close_at_exit, weakref.ref(self))

    def put(self, row: tuple[Any, ...]) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("the store is closed")
            self._pending.append(row)
            self._queued += 1
            self._ensure_thread()
            self._cond.notify_all()

    def pending(self) -> bool:
        return self._queued != self._written

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until every row queued before this call is written (or dropped after an error)."""
        with self._cond:
            target = self._queued
            if self._written >= target:
                return
            self._ensure_thread()
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._written >= target, timeout=timeout_s)

    def close(self) -> None:
        self.flush()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _ensure_thread(self) -> None:
        if self._pid != os.getpid():  # forked: the parent's thread does not exist here
            self._pid, self._thread = os.getpid(), None
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="toolproof-settle", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._pending) or self._closed)
                if not self._pending:
                    return
                batch = self._pending[: self._max_batch]
                del self._pending[: self._max_batch]
            try:
                self._write_batch(batch)
            except Exception:  # the intents stay in_flight, then unknown after their lease: safe, never re-run
                log.exception("toolproof: %d journal settlements could not be written", len(batch))
            with self._cond:
                self._written += len(batch)
                self._cond.notify_all()
