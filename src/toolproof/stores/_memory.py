"""An in-memory store: the default for `Runner(toolset)`; state lives as long as the object, within bounds.

Everything it keeps is bounded by count and by size (the JSON text of a row's arguments, outcome and texts;
Python objects take about 2-3 times that): audit records (`max_audit`, `max_audit_bytes`: counted at about
their size in memory, `records.audit_bytes`; the oldest fall off), finished journal intents
(`max_intents`, `max_intent_bytes`: the oldest finished first; an `in_flight` or `unknown` intent is never
dropped, it is what stops a write from running twice) and stop records (`max_stops`, `max_stop_bytes`: the
earliest resolved first, then the oldest). A resend of a write whose intent was dropped runs again: the
journal's exactly-once holds for the newest `max_intents` writes here; a SQL store keeps them for its
retention (24 h).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from time import time
from typing import Any, Final

from ._approval import ApprovalRequest, ApprovalStatus
from ._base import FinishStatus, Store
from ._intent import Intent, IntentStatus
from ._pins import Pin
from ._records import AUDIT_ROW_BYTES, AuditRecord, EffectStatus, StopRecord, approx_bytes, audit_bytes

log = logging.getLogger("toolproof")

#: Bytes counted for a row's fixed fields (ids, times, statuses) on top of its JSON text.
_ROW_BYTES: Final = 512
_MIB: Final = 1024 * 1024
# An audit entry's fixed part and each argument's key and value objects, as `records.audit_bytes` counts them.
_PLAIN_ENTRY: Final = AUDIT_ROW_BYTES + 240
_PLAIN_ITEM: Final = 56 + 16 + 56


class _Fifo:
    """Keys in the order they became droppable, with their sizes: which to drop first past a count or a size."""

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}
        self.bytes = 0

    def add(self, key: str, size: int) -> None:
        self.discard(key)
        self.sizes[key] = size
        self.bytes += size

    def discard(self, key: str) -> None:
        self.bytes -= self.sizes.pop(key, 0)

    def oldest(self) -> str:
        return next(iter(self.sizes))


def _size(*values: Any) -> int:
    """A row's size: the JSON text of its variable parts (a value JSON cannot hold counts as 1 KB)."""
    try:
        return _ROW_BYTES + len(json.dumps(values, default=repr, skipkeys=True, ensure_ascii=False))
    except (ValueError, TypeError, RecursionError):
        return _ROW_BYTES + 1024


def _stop_size(stop: StopRecord) -> int:
    texts = (stop.message, stop.traceback, stop.exception_message, stop.resolution)
    return _size(stop.arguments, stop.extra) + sum(len(t) for t in texts if t)


class MemoryStore(Store):
    url = "memory://"
    blocks = False  # dicts under a lock: its async forms run inline, no thread hop

    def __init__(
        self,
        *,
        max_audit: int = 100_000,
        max_audit_bytes: int = 48 * _MIB,
        max_intents: int = 20_000,
        max_intent_bytes: int = 64 * _MIB,
        max_stops: int = 10_000,
        max_stop_bytes: int = 64 * _MIB,
    ) -> None:
        if min(max_audit, max_audit_bytes, max_intents, max_intent_bytes, max_stops, max_stop_bytes) < 1:
            raise ValueError("the bounds of a MemoryStore must be >= 1")
        self.max_audit, self.max_audit_bytes = max_audit, max_audit_bytes
        self.max_intents, self.max_intent_bytes = max_intents, max_intent_bytes
        self.max_stops, self.max_stop_bytes = max_stops, max_stop_bytes
        self._lock = threading.Lock()
        # Deques: the oldest records fall off in O(1) (a list's `del [:n]` moved 100,000 rows a batch). They hold
        # built records and, from `audit_sink`, entries that are built when read, with the size of each.
        self._audit: deque[Any] = deque()
        self._audit_sizes: deque[int] = deque()
        self._audit_bytes = 0
        self._audit_lock = threading.Lock()  # the sink's own: a long read under `_lock` must not stall calls
        self._build: Callable[[Any], AuditRecord] | None = None
        self._stops: dict[str, StopRecord] = {}
        self._stop_sizes = _Fifo()  # every stop, oldest first
        self._resolved: dict[str, None] = {}  # resolved stops, in the order they were resolved: dropped first
        self._intents: dict[str, Intent] = {}
        self._finished = _Fifo()  # done and failed intents, in the order they finished: the only ones dropped
        self._warned_drop = False
        self._operations: dict[str, str] = {}  # operation id -> key: the UNIQUE index of the SQL stores
        self._approvals: dict[str, ApprovalRequest] = {}
        self._pins: dict[tuple[str, str], Pin] = {}

    def pin_claim(self, pin: Pin) -> Pin:
        with self._lock:
            return self._pins.setdefault((pin.upstream, pin.tool), pin)

    def pin_put(self, pin: Pin) -> None:
        with self._lock:
            self._pins[(pin.upstream, pin.tool)] = pin

    def pin_list(self, *, upstream: str | None = None) -> list[Pin]:
        with self._lock:
            return [p for k, p in sorted(self._pins.items()) if upstream is None or k[0] == upstream]

    def append_audit(self, records: Sequence[AuditRecord]) -> None:
        for record in records:
            self._keep_audit(record, audit_bytes(record.arguments, record.exception_message, record.traceback))

    def _keep_audit(self, item: Any, size: int) -> None:
        """Keep one record or entry; past `max_audit` records or `max_audit_bytes` the oldest fall off."""
        with self._audit_lock:
            self._audit.append(item)
            self._audit_sizes.append(size)
            self._audit_bytes += size
            self._trim_audit()

    def _sink(self, entry: tuple[Any, ...]) -> None:
        """The hot path's audit entry, kept with its size: its arguments, the value an invalid call sent (in
        the error) and the tool's exception text. A success with plain arguments is sized inline (this runs on
        every call); anything else by `audit_bytes`."""
        args, error, failure = entry[7], entry[12], entry[13]
        size = _PLAIN_ENTRY
        if type(args) is dict and error is None:
            for value in args.values():
                size += _PLAIN_ITEM + len(value) if type(value) is str else _PLAIN_ITEM + approx_bytes(value, 1)
        else:
            size = audit_bytes(args, *(failure[1:] if failure is not None else ()))
            received = getattr(error, "received", None) if error is not None else None
            if received is not None:
                size += approx_bytes(received)
        with self._audit_lock:
            self._audit.append(entry)
            self._audit_sizes.append(size)
            self._audit_bytes += size
            if self._audit_bytes > self.max_audit_bytes or len(self._audit) > self.max_audit:
                self._trim_audit()

    def _trim_audit(self) -> None:
        while len(self._audit) > self.max_audit or (self._audit_bytes > self.max_audit_bytes and len(self._audit) > 1):
            self._audit.popleft()
            self._audit_bytes -= self._audit_sizes.popleft()

    def audit_sink(self, build: Callable[[Any], AuditRecord]) -> Callable[[Any], None] | None:
        """Entries go straight into the bounded deque (an append and its size, no thread), built when read; a
        subclass that overrides `append_audit` gets built records through it instead.

        Earns its place: building a record on the writer's thread cost ~1.2 µs of every default call (it shares
        the GIL with the caller), and most in-memory records are never read (benchmarks/bench_runner.py)."""
        if type(self).append_audit is not MemoryStore.append_audit:
            return None
        if self._build is not None and self._build is not build:
            raise ValueError("this MemoryStore already builds its audit entries with another function")
        self._build = build
        return self._sink

    def _records(self, items: Iterable[Any]) -> Iterator[AuditRecord]:
        build = self._build
        for item in items:
            yield item if type(item) is AuditRecord or build is None else build(item)

    def list_audit(
        self, *, limit: int = 100, tool: str | None = None, call_id: str | None = None
    ) -> list[AuditRecord]:
        with self._lock:
            rows = []
            with self._audit_lock:
                held = list(self._audit)
            for r in self._records(reversed(held)):  # a copy: the sink appends under its own lock
                if (tool is None or r.tool == tool) and (call_id is None or r.call_id == call_id):
                    rows.append(r)
                    if len(rows) >= limit:
                        break
        return rows

    def field_failures(self) -> list[tuple[str, str, str | None, int]]:
        counts: Counter[tuple[str, str, str | None]] = Counter()
        with self._lock:
            with self._audit_lock:
                held = list(self._audit)
            for rec in self._records(held):  # a copy: the sink appends under its own lock
                if rec.validation == "failed":
                    for name in rec.failing_fields or ("<arguments>",):
                        counts[(rec.tool, name, rec.schema_version)] += 1
        return [(t, f, v, n) for (t, f, v), n in counts.most_common()]

    def add_stop(self, stop: StopRecord) -> None:
        with self._lock:
            self._add_stop(stop)

    def add_stop_once(self, stop: StopRecord) -> bool:
        with self._lock:
            if stop.id in self._stops:
                return False
            self._add_stop(stop)
            return True

    def _add_stop(self, stop: StopRecord) -> None:
        self._stops[stop.id] = stop
        self._stop_sizes.add(stop.id, _stop_size(stop))
        if stop.resolved_at is not None:
            self._resolved[stop.id] = None
        self._trim_stops()

    def _trim_stops(self) -> None:
        sizes = self._stop_sizes
        while len(sizes.sizes) > self.max_stops or sizes.bytes > self.max_stop_bytes:
            stop_id = next(iter(self._resolved)) if self._resolved else sizes.oldest()
            self._resolved.pop(stop_id, None)
            sizes.discard(stop_id)
            del self._stops[stop_id]

    def list_stops(
        self, *, resolved: bool | None = None, limit: int = 100, call_id: str | None = None
    ) -> list[StopRecord]:
        with self._lock:
            stops = sorted(self._stops.values(), key=lambda s: s.at, reverse=True)
        stops = [s for s in stops if (resolved is None or (s.resolved_at is not None) == resolved)
                 and (call_id is None or s.call_id == call_id)]
        return stops[:limit]

    def get_stop(self, stop_id: str) -> StopRecord | None:
        with self._lock:
            return self._stops.get(stop_id)

    def resolve_stop(
        self, stop_id: str, *, resolution: str, effect_status: EffectStatus | None = None
    ) -> StopRecord | None:
        with self._lock:
            stop = self._stops.get(stop_id)
            if stop is None:
                return None
            updated = replace(
                stop,
                resolved_at=time(),
                resolution=resolution,
                effect_status=effect_status or stop.effect_status,
            )
            self._stops[stop_id] = updated
            self._stop_sizes.sizes[stop_id] = size = _stop_size(updated)  # in place: its age is unchanged
            self._stop_sizes.bytes += size - _stop_size(stop)
            self._resolved[stop_id] = None
            self._trim_stops()
            return updated

    # --- approval requests ----------------------------------------------------------------------------------
    def approval_add(self, request: ApprovalRequest) -> bool:
        with self._lock:
            if request.id in self._approvals:
                return False
            self._approvals[request.id] = request
            return True

    def approval_get(self, request_id: str) -> ApprovalRequest | None:
        with self._lock:
            return self._approvals.get(request_id)

    def approval_list(self, *, status: ApprovalStatus | None = None, limit: int = 100) -> list[ApprovalRequest]:
        with self._lock:
            rows = [r for r in self._approvals.values() if status is None or r.status == status]
        rows.sort(key=lambda r: r.at, reverse=True)
        return rows[:limit]

    def approval_decide(
        self, request_id: str, status: ApprovalStatus, *, by: str, note: str | None, now: float
    ) -> bool:
        with self._lock:
            row = self._approvals.get(request_id)
            if row is None or row.status != "pending" or (status != "expired" and row.expires_at < now):
                return False
            self._approvals[request_id] = replace(row, status=status, decided_by=by, decided_at=now, note=note)
            return True

    # --- write journal ------------------------------------------------------------------------------------
    def journal_claim(self, intent: Intent) -> bool:
        with self._lock:
            if intent.key in self._intents or intent.operation_id in self._operations:
                return False
            self._intents[intent.key] = intent
            self._operations[intent.operation_id] = intent.key
            return True

    def journal_get(self, key: str) -> Intent | None:
        with self._lock:
            return self._intents.get(key)

    def journal_for_operation(self, operation_id: str) -> Intent | None:
        with self._lock:
            key = self._operations.get(operation_id)
            return self._intents.get(key) if key is not None else None

    def journal_finish(self, key: str, owner: str, status: FinishStatus, outcome: Any, now: float) -> bool:
        with self._lock:
            row = self._intents.get(key)
            if row is None or row.status != "in_flight" or row.owner != owner:
                return False
            self._intents[key] = row = replace(row, status=status, outcome=outcome, updated_at=now)
            self._finished_now(row)
            return True

    def journal_release(self, key: str, owner: str) -> bool:
        with self._lock:
            row = self._intents.get(key)
            if row is None or row.status != "in_flight" or row.owner != owner:
                return False
            self._drop(row)
            return True

    def journal_renew(self, key: str, owner: str, lease_until: float) -> bool:
        with self._lock:
            row = self._intents.get(key)
            if row is None or row.status not in ("in_flight", "unknown") or row.owner != owner:
                return False
            self._intents[key] = replace(row, lease_until=lease_until)
            return True

    def journal_expire(self, now: float, key: str | None = None) -> int:
        with self._lock:
            rows = [self._intents[key]] if key is not None and key in self._intents else (
                [] if key is not None else list(self._intents.values()))
            count = 0
            for row in rows:
                if row.status == "in_flight" and row.lease_until < now:
                    self._intents[row.key] = replace(row, status="unknown", updated_at=now)
                    count += 1
            return count

    def journal_resolve(self, key: str, *, done: bool, outcome: Any, resolution: str, now: float) -> Intent | None:
        with self._lock:
            row = self._intents.get(key)
            if row is None:
                return None
            if done:
                settled = replace(row, status="done", outcome=outcome, resolution=resolution, updated_at=now)
                self._intents[key] = settled
                self._finished_now(settled)
                return settled
            self._drop(row)
            return replace(row, resolution=resolution, updated_at=now)

    def journal_list(self, *, status: IntentStatus | None = None, limit: int = 100) -> list[Intent]:
        with self._lock:
            rows = [r for r in self._intents.values() if status is None or r.status == status]
        rows.sort(key=lambda r: r.created_at, reverse=True)
        return rows[:limit]

    def journal_prune(self, before: float, key: str | None = None) -> int:
        with self._lock:
            rows = self._intents.values() if key is None else [r for r in (self._intents.get(key),) if r is not None]
            old = [r for r in rows if r.status in ("done", "failed") and r.updated_at < before]
            for row in old:
                self._drop(row)
            return len(old)

    def _finished_now(self, row: Intent) -> None:
        """A done or failed intent may be dropped from now on: the oldest finished go first past the bounds."""
        if row.status not in ("done", "failed"):
            return
        finished = self._finished
        finished.add(row.key, _size(row.arguments, row.outcome))
        while len(finished.sizes) > self.max_intents or finished.bytes > self.max_intent_bytes:
            if not self._warned_drop:
                self._warned_drop = True
                log.warning("toolproof: the in-memory store holds %d finished writes (or %d bytes) at most; the "
                            "oldest are dropped, and a resend of one of them would run again. Use a SQL store "
                            "(TOOLPROOF_STORE) to keep them for the journal's retention.",
                            self.max_intents, self.max_intent_bytes)
            self._drop(self._intents[finished.oldest()])

    def _drop(self, row: Intent) -> None:
        self._finished.discard(row.key)
        del self._intents[row.key]
        if self._operations.get(row.operation_id) == row.key:
            del self._operations[row.operation_id]
