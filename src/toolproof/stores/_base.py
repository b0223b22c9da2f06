"""The Store interface: where the audit trail, the stop records and the write journal live.

Stores know SQL; nothing else does. A store never imports the runner.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ._approval import ApprovalRequest, ApprovalStatus
from ._chain import ChainKind, ChainReport
from ._intent import Intent, IntentStatus
from ._pins import Pin
from ._query import (
    AuditQuery,
    AuditTally,
    Order,
    Page,
    StopGroup,
    audit_page,
    decided_last,
    group_stops,
    page_by_offset,
    pending_first,
)
from ._records import AuditRecord, EffectStatus, StopRecord

FinishStatus = Literal["done", "failed", "unknown"]
_T = TypeVar("_T")
_EVERY = 10**9  # "no limit" for the fallbacks that read a whole list


def shown_url(url: str) -> str:
    """A store URL as it may be printed or logged: any password masked."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)))


class StoreUnavailable(OSError):
    """The store cannot be used now, and why: `cause` is a short class (`file replaced`, `file removed`,
    `connection refused`, `timeout`), `store` the store as it may be shown (redacted), `waited_s` how long the
    call waited for it, when it did. An `OSError`, so every caller treats it as a store that is away."""

    def __init__(self, message: str, *, store: str, cause: str, waited_s: float | None = None) -> None:
        super().__init__(message)
        self.store, self.cause, self.waited_s = store, cause, waited_s

    def __str__(self) -> str:
        return str(self.args[0])


class StoreNotFound(LookupError):
    """Opening with `create=False` found no store: a missing file or folder, a missing database, or a
    database without toolproof's tables. A command that only reads says so instead of creating one."""


class Store(ABC):
    """One durable (or in-memory) home for audit records, stop records and, later, the journal."""

    url: str = ""
    #: Set by `close()`; a closed store is not used again (the audit writer drops, and says so, what it holds).
    closed: bool = False

    def unreachable(self, exc: BaseException) -> bool:
        """Whether a failed call means the store is away (retry later), not that it refused what it was given
        (a record it can never hold: the audit writer drops that one alone and keeps the rest flowing)."""
        return isinstance(exc, OSError | TimeoutError)

    # --- audit trail ----------------------------------------------------------------------------------
    @abstractmethod
    def append_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append a batch of audit records (called from a background writer, not per call)."""

    def audit_sink(self, build: Callable[[Any], AuditRecord]) -> Callable[[Any], None] | None:
        """Where the hot path may hand one audit entry straight to the store, which turns it into a record with
        `build` only when it is read; None (the default): records are built and written in batches by the
        audit writer's thread. Only a store in this process's memory can take entries (they are not records)."""
        return None

    @abstractmethod
    def list_audit(
        self, *, limit: int = 100, tool: str | None = None, call_id: str | None = None
    ) -> list[AuditRecord]:
        """The newest records first; `tool` and `call_id` filter when given."""

    @abstractmethod
    def field_failures(self) -> list[tuple[str, str, str | None, int]]:
        """(tool, field, schema_version, count) of validation failures, most frequent first."""

    # --- stop records -----------------------------------------------------------------------------------
    @abstractmethod
    def add_stop(self, stop: StopRecord) -> None: ...

    @abstractmethod
    def list_stops(
        self, *, resolved: bool | None = None, limit: int = 100, call_id: str | None = None
    ) -> list[StopRecord]:
        """The newest stops first; `resolved` and `call_id` filter when given."""

    @abstractmethod
    def get_stop(self, stop_id: str) -> StopRecord | None: ...

    def add_stop_once(self, stop: StopRecord) -> bool:
        """Add `stop` unless one with its id is stored; True when this call added it. For a record several
        observers may write at once (a dead worker's, whose id comes from its claim): the store keeps one.
        The SQL and memory stores do it in one atomic step; this default is a check, then a write."""
        if self.get_stop(stop.id) is not None:
            return False
        self.add_stop(stop)
        return True

    @abstractmethod
    def resolve_stop(
        self, stop_id: str, *, resolution: str, effect_status: EffectStatus | None = None
    ) -> StopRecord | None:
        """Mark a stop resolved (and, when known, settle its effect status); None if there is no such stop."""

    # --- write journal: one row per intended write, claimed before dispatch so a repeat finds it ------------
    @abstractmethod
    def journal_claim(self, intent: Intent) -> bool:
        """`INSERT ... ON CONFLICT DO NOTHING`: True when this call wrote the row (its key and its operation
        were free), False when a row with the same key or the same operation id exists."""

    @abstractmethod
    def journal_get(self, key: str) -> Intent | None: ...

    @abstractmethod
    def journal_for_operation(self, operation_id: str) -> Intent | None:
        """The intent holding this operation id (at most one exists), if any."""

    @abstractmethod
    def journal_finish(self, key: str, owner: str, status: FinishStatus, outcome: Any, now: float) -> bool:
        """Settle an `in_flight` intent that `owner` still holds; False when it is not (any more) theirs."""

    @abstractmethod
    def journal_release(self, key: str, owner: str) -> bool:
        """Delete an `in_flight` intent that `owner` holds (nothing happened: a corrected call may proceed)."""

    @abstractmethod
    def journal_renew(self, key: str, owner: str, lease_until: float) -> bool:
        """Extend the lease of an intent `owner` holds while its handler runs (`in_flight`, or `unknown` after
        its time limit while the attempt runs on); False when it is not (any more) theirs."""

    @abstractmethod
    def journal_expire(self, now: float, key: str | None = None) -> int:
        """Turn `in_flight` intents whose lease ended before `now` into `unknown` (their worker died)."""

    @abstractmethod
    def journal_resolve(
        self, key: str, *, done: bool, outcome: Any, resolution: str, now: float
    ) -> Intent | None:
        """Reconcile an intent: done -> status `done` with `outcome`; not done -> deleted. Returns the row as
        it was settled (for not done, the deleted row with its resolution), or None if there is none."""

    @abstractmethod
    def journal_list(self, *, status: IntentStatus | None = None, limit: int = 100) -> list[Intent]:
        """The newest intents first."""

    @abstractmethod
    def journal_prune(self, before: float, key: str | None = None) -> int:
        """Delete finished intents (`done`, `failed`) last updated before `before` (only `key`'s, when given);
        never unknown or in flight."""

    # --- pins: reviewed upstream tool definitions (the gateway's drift check) ---------------------------------
    def pin_claim(self, pin: Pin) -> Pin:
        """Store `pin` unless (upstream, tool) is pinned already; return the pin that holds (first sight wins,
        so gateways of one fleet agree)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no pins")

    def pin_put(self, pin: Pin) -> None:
        """Write `pin` over whatever (upstream, tool) held (an accepted change, a pending one, an approval)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no pins")

    def pin_list(self, *, upstream: str | None = None) -> list[Pin]:
        """Every pin, by upstream and tool."""
        raise NotImplementedError(f"{type(self).__name__} keeps no pins")

    def resolve_stops_for_key(self, key: str, *, resolution: str, effect_status: EffectStatus) -> int:
        """Resolve every open stop record linked to an idempotency key; returns how many."""
        count = 0
        for stop in self.list_stops(resolved=False, limit=1_000_000):
            if stop.idempotency_key == key:
                self.resolve_stop(stop.id, resolution=resolution, effect_status=effect_status)
                count += 1
        return count

    # --- approval requests: one per gated call, decided at most once -----------------------------------------
    # Not abstract, so a store written before approvals existed still works for everything else.
    def approval_add(self, request: ApprovalRequest) -> bool:
        """Insert a pending request; False when one with this id exists (the first request stands)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no approval requests")

    def approval_get(self, request_id: str) -> ApprovalRequest | None:
        raise NotImplementedError(f"{type(self).__name__} keeps no approval requests")

    def approval_list(self, *, status: ApprovalStatus | None = None, limit: int = 100) -> list[ApprovalRequest]:
        """The newest requests first; `status` filters on the stored status."""
        raise NotImplementedError(f"{type(self).__name__} keeps no approval requests")

    def approval_decide(
        self, request_id: str, status: ApprovalStatus, *, by: str, note: str | None, now: float
    ) -> bool:
        """Decide a request that is still pending (and, unless `status` is expired, not past its expiry) in
        one conditional write: True for the one decision that applied, False for any later one."""
        raise NotImplementedError(f"{type(self).__name__} keeps no approval requests")

    # --- the console's queries (`query.py`): pages over the whole store, counted ---------------------------------
    # The SQL stores answer each with one or two indexed or scanning statements; these fallbacks read the plain
    # lists, for the in-memory store (bounded by its own `max_audit`).
    def audit_page(self, query: AuditQuery, *, order: Order = "newest", limit: int = 50,
                   cursor: str | None = None) -> Page[AuditRecord]:
        """The audit records matching `query`, `limit` at a time, newest (or oldest) first."""
        return audit_page(self.list_audit(limit=_EVERY), query, order=order, limit=limit, cursor=cursor)

    def audit_total(self) -> int:
        """How many audit records the store holds."""
        return len(self.list_audit(limit=_EVERY))

    def audit_for_key(self, key: str) -> list[AuditRecord]:
        """Every audit record of one operation (idempotency key), oldest first: the trail of one write."""
        return [r for r in reversed(self.list_audit(limit=_EVERY)) if r.idempotency_key == key]

    def audit_for_call(self, call_id: str) -> list[AuditRecord]:
        """Every audit record of one call (each attempt, its replays), oldest first."""
        return list(reversed(self.list_audit(limit=_EVERY, call_id=call_id)))

    def audit_tally(self, after: int = 0) -> tuple[list[AuditTally], int]:
        """Calls per (tool, class, code, outcome) among the records stored after the first `after` (all of them
        by default), and how many records that counts up to: a caller adds the next tally to this one instead
        of counting the whole store again. Decisions and reconciliations (no schema version) are not calls."""
        counts: dict[tuple[str, str | None, str | None, str], int] = {}
        every = self.list_audit(limit=_EVERY)
        for r in every[:max(len(every) - after, 0)]:
            if r.schema_version is not None:
                k = (r.tool, r.error_class, r.code, r.outcome)
                counts[k] = counts.get(k, 0) + 1
        return [AuditTally(*k, count=n) for k, n in counts.items()], max(len(every), after)

    def approval_page(self, *, pending: bool, now: float, limit: int = 50,
                      cursor: str | None = None) -> Page[ApprovalRequest]:
        """Requests still waiting as of `now`, the one expiring first at the top; or (`pending=False`) the
        decided and expired ones, the last decided first."""
        every = self.approval_list(limit=_EVERY)
        waiting, order = pending_first(now)
        if pending:
            return page_by_offset(sorted(filter(waiting, every), key=order), limit, cursor)  # type: ignore[arg-type]
        done = sorted((r for r in every if not waiting(r)), key=decided_last, reverse=True)
        return page_by_offset(done, limit, cursor)

    def approvals_for_key(self, key: str) -> list[ApprovalRequest]:
        """The approval requests of one operation, oldest first."""
        return sorted((r for r in self.approval_list(limit=_EVERY) if r.idempotency_key == key), key=lambda r: r.at)

    def stop_page(self, *, limit: int = 50, cursor: str | None = None,
                  group: tuple[str, str, str, str] | None = None) -> Page[StopRecord]:
        """Open stop records, newest first; only those of one `StopGroup.key` when given."""
        stops = self.list_stops(resolved=False, limit=_EVERY)
        if group is not None:
            stops = [s for s in stops if (s.tool, s.error_class, s.code, s.reason) == group]
        return page_by_offset(stops, limit, cursor)

    def stop_groups(self) -> list[StopGroup]:
        """Open stop records grouped by (tool, class, code, reason), the largest group first."""
        return group_stops(self.list_stops(resolved=False, limit=_EVERY))

    def stops_for_key(self, key: str) -> list[StopRecord]:
        """Every stop record (open or resolved) of one operation, oldest first."""
        return sorted((s for s in self.list_stops(limit=_EVERY) if s.idempotency_key == key), key=lambda s: s.at)

    async def aapproval_add(self, request: ApprovalRequest) -> bool:
        return await self._off_loop(self.approval_add, request)

    async def aapproval_get(self, request_id: str) -> ApprovalRequest | None:
        return await self._off_loop(self.approval_get, request_id)

    # --- async forms for the event-loop path ----------------------------------------------------------------
    # A blocking store call would stall every task on the loop, so by default each one runs on a worker
    # thread; a store that never blocks (`blocks = False`: memory) runs them inline, and stores with real
    # async I/O (PostgreSQL) override them.

    #: Whether this store's calls may block on I/O (disk, network).
    blocks: bool = True

    async def _off_loop(self, fn: Callable[..., _T], *args: Any) -> _T:
        """`fn(*args)` on a worker thread when this store blocks, else inline (a thread hop costs ~50 µs)."""
        if self.blocks:
            return await asyncio.to_thread(fn, *args)
        return fn(*args)

    async def ajournal_claim(self, intent: Intent) -> bool:
        return await self._off_loop(self.journal_claim, intent)

    async def ajournal_get(self, key: str) -> Intent | None:
        return await self._off_loop(self.journal_get, key)

    async def ajournal_for_operation(self, operation_id: str) -> Intent | None:
        return await self._off_loop(self.journal_for_operation, operation_id)

    async def ajournal_finish(self, key: str, owner: str, status: FinishStatus, outcome: Any, now: float) -> bool:
        return await self._off_loop(self.journal_finish, key, owner, status, outcome, now)

    async def ajournal_release(self, key: str, owner: str) -> bool:
        return await self._off_loop(self.journal_release, key, owner)

    async def ajournal_expire(self, now: float, key: str | None = None) -> int:
        return await self._off_loop(self.journal_expire, now, key)

    async def ajournal_prune(self, before: float, key: str | None = None) -> int:
        return await self._off_loop(self.journal_prune, before, key)

    async def aadd_stop(self, stop: StopRecord) -> None:
        await self._off_loop(self.add_stop, stop)

    async def aadd_stop_once(self, stop: StopRecord) -> bool:
        return await self._off_loop(self.add_stop_once, stop)

    async def aclose(self) -> None:
        """Close from inside an event loop (releases async connections too)."""
        await self._off_loop(self.close)

    def verify_chain(self, kind: ChainKind, *, anchors: Sequence[str] = ()) -> ChainReport:
        """The hash chain over audit (`kind="audit"`) or stop records checked from its first row (chain.py);
        SQL stores keep one, a store in this process's memory does not (ValueError)."""
        raise ValueError(f"the store {shown_url(self.url)} keeps no hash chain (only SQLite and PostgreSQL stores "
                         "do: nothing of an in-memory store outlives the process)")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and flush; a closed store is not used again."""
