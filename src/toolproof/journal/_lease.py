"""Leases that live while a tool runs: a heartbeat renews every claim this journal's workers hold.

A claim's lease says how long it is trusted without its worker. With a heartbeat the lease can be short: a
live worker renews it every `every_s` while the handler runs (on whatever thread or task it runs), so a
worker killed mid-call leaves a lease that lapses within `lease_s`, not after twice the tool's timeout. The
renewal is conditional on the owner (`Store.journal_renew`), so a lease taken over is never renewed again;
an attempt that outlives its time limit keeps its (now `unknown`) entry's lease alive until it ends, which
tells a resend's verify that the first attempt may still commit.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final

from ..stores._base import Store

__all__ = ["LeaseKeeper"]

log: Final = logging.getLogger("toolproof")


class LeaseKeeper:
    """One daemon thread per journal, started by the first claim it holds, renewing the held claims' leases."""

    def __init__(self, store: Store, now: Callable[[], float], *, lease_s: float, every_s: float) -> None:
        if not 0 < every_s < lease_s:
            raise ValueError(f"the heartbeat ({every_s:g} s) must be positive and shorter than the lease "
                             f"({lease_s:g} s)")
        self.store, self.now, self.lease_s, self.every_s = store, now, lease_s, every_s
        self._held: dict[str, str] = {}  # key -> owner
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def hold(self, key: str, owner: str) -> None:
        """Renew this claim's lease from now on, until `let_go`."""
        with self._lock:
            self._held[key] = owner
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._beat, name="toolproof-lease", daemon=True)
                self._thread.start()

    def let_go(self, key: str) -> None:
        """The handler has ended: its lease is left to run out (or the entry is settled)."""
        with self._lock:
            self._held.pop(key, None)

    def ended(self, key: str, owner: str) -> None:
        """An attempt that outlived its time limit has ended: its (unknown) entry's lease ends now, so a resend
        may verify it at once."""
        self.let_go(key)
        try:
            self.store.journal_renew(key, owner, self.now())
        except Exception as exc:  # the lease then runs out by itself
            log.warning("toolproof: could not end the lease of %s (%s: %s)", key, type(exc).__name__, exc)

    def held(self) -> int:
        with self._lock:
            return len(self._held)

    def close(self) -> None:
        """Stop renewing (the runner closes): the leases still held run out by themselves."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            with self._lock:
                held = list(self._held.items())
            for key, owner in held:
                self._renew(key, owner)

    def _renew(self, key: str, owner: str) -> None:
        """One renewal; a store that fails is logged once per outage (the lease may then lapse: the entry turns
        `unknown`, never run twice) and tried again at the next beat."""
        try:
            kept = self.store.journal_renew(key, owner, self.now() + self.lease_s)
        except Exception as exc:
            if not self._failing:
                log.warning("toolproof: could not renew the lease of %s (%s: %s); it may lapse", key,
                            type(exc).__name__, exc)
            self._failing = True
            return
        self._failing = False
        if not kept:  # settled, released or taken over: nothing left to keep alive
            self.let_go(key)
