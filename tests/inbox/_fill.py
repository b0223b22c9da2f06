"""A store filled the way agents fill it, fast: eight tools' calls (retries, failures, validation failures,
gated calls), approval requests waiting and decided, alike and different stop records. Written through the
store's own API in a few large batches (what the audit writer does), so 100,000 records take seconds."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Final

from toolproof.stores import Store, open_store
from toolproof.stores._approval import ApprovalRequest
from toolproof.stores._records import AuditRecord, StopRecord

TOOLS: Final = ("Weather", "get_price", "place_order", "pay", "send_email", "lookup_customer", "refund", "ship")
WRITES: Final = frozenset({"place_order", "pay", "send_email", "refund", "ship"})
STEP_S: Final = 10.0  # one record every 10 s: 100,000 records span about 11.6 days
_WRITE_ARGS: Final = tuple({"amount_rs": 22_000 + k, "to": "Kisan Co-op"} for k in range(7))
_READ_ARGS: Final = {"city": "Pune"}
PENDING: Final = 267
DECIDED: Final = 40
ALIKE_STOPS: Final = 8


@dataclass
class Filled:
    """What the filler wrote, for the tests to check the pages against."""

    url: str
    records: int
    first_at: float
    call_ids: list[str] = field(default_factory=list)
    by_tool: dict[str, int] = field(default_factory=dict)
    by_outcome: dict[str, int] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)  # ids, the one expiring first first
    stops: int = 0

    def at(self, i: int) -> float:
        return self.first_at + i * STEP_S


def call_id(i: int) -> str:
    """A call id shaped like the real ones (24 hex digits), different for every record."""
    return hashlib.blake2b(i.to_bytes(8, "big"), digest_size=12).hexdigest()


def record(i: int, first_at: float) -> AuditRecord:
    tool = TOOLS[i % len(TOOLS)]
    failed, invalid, gated = i % 13 == 5, i % 97 == 3, tool in WRITES and i % 50 == 7
    outcome = "approval_pending" if gated else "invalid" if invalid else "error" if failed else "ok"
    cls = ("needs_clarification" if gated else "invalid_argument" if invalid else
           "transient_upstream" if failed else None)
    code = "APPROVAL_REQUIRED" if gated else "WRONG_TYPE" if invalid else "UPSTREAM_TIMEOUT" if failed else None
    return AuditRecord(
        at=first_at + i * STEP_S, call_id=call_id(i), tool=tool, schema_version="1",
        arguments=_WRITE_ARGS[i % 7] if tool in WRITES else _READ_ARGS,
        validation="failed" if invalid else "ok", attempt=1 + (i % 3 if failed else 0), latency_ms=12.5,
        outcome=outcome, run_id=f"run-{i // 500}", conversation_id=f"chat-{i // 20}", principal=f"B-{i % 40}",
        failing_fields=("amount_rs",) if invalid else (), error_class=cls, code=code,
        idempotency_key=f"tp1_{i:064x}" if tool in WRITES else None)


def fill(url: str, records: int, *, now: float | None = None) -> Filled:
    """Write `records` audit records, the approvals and the stops into the store at `url` (created)."""
    store = open_store(url + ("&" if "?" in url else "?") + "synchronous=OFF" if url.startswith("sqlite") else url)
    try:
        return fill_store(store, records, now=now, url=url)
    finally:
        store.close()


def fill_store(store: Store, records: int, *, now: float | None = None, url: str = "") -> Filled:
    """`fill` into a store already open (an in-memory one, say)."""
    now = float(int(time.time())) if now is None else now  # whole seconds: a time typed back finds its record
    first_at = now - records * STEP_S - 3600
    out = Filled(url=url, records=records, first_at=first_at)
    for lo in range(0, records, 20_000):
        batch = [record(i, first_at) for i in range(lo, min(lo + 20_000, records))]
        store.append_audit(batch)
        out.call_ids += [r.call_id for r in batch]
        for r in batch:
            out.by_tool[r.tool] = out.by_tool.get(r.tool, 0) + 1
            out.by_outcome[r.outcome] = out.by_outcome.get(r.outcome, 0) + 1
    pending = _approvals(store, now)
    out.pending = [r.id for r in sorted(pending, key=lambda r: (r.expires_at, r.id))]
    out.stops = _stops(store, now)
    return out


def _approvals(store: Store, now: float) -> list[ApprovalRequest]:
    """PENDING waiting requests asked in one order and expiring in another (newest first is not urgent
    first), and DECIDED ones."""
    waiting = []
    for j in range(PENDING + DECIDED):
        r = ApprovalRequest(
            id=f"apr_{j:04d}", at=now - 3600 + j, tool="pay", call_id=call_id(10_000_000 + j),
            arguments={"amount_rs": 22_000 + j, "to": "Kisan Co-op"}, idempotency_key=f"tp1_apr{j:060x}",
            fingerprint=f"f{j}", reason=f"amount {22_000 + j} Rs is above the 10000 Rs limit",
            expires_at=now + 600 + ((j * 37) % (PENDING + DECIDED)) * 60, principal=f"B-{j % 40}",
            conversation_id=f"chat-a{j}")
        store.approval_add(r)
        if j < PENDING:
            waiting.append(r)
        else:
            store.approval_decide(r.id, "approved" if j % 2 else "denied", by="alice", note="checked", now=now - j)
    return waiting


def _stops(store: Store, now: float) -> int:
    """ALIKE_STOPS circuit-open stops of one tool (one group) and a few different ones."""
    kinds = [("Weather", "transient_upstream", "CIRCUIT_OPEN", "circuit_open")] * ALIKE_STOPS + [
        ("pay", "outcome_unknown", "UPSTREAM_TIMEOUT", "outcome_unknown"),
        ("ship", "transient_upstream", "UPSTREAM_TIMEOUT", "budget_exhausted"),
        ("refund", "conflict", "STALE_VERSION", "non_retryable")]
    for k, (tool, cls, code, reason) in enumerate(kinds):
        store.add_stop(StopRecord(
            id=f"stp_{k:03d}", at=now - 600 + k, tool=tool, call_id=call_id(20_000_000 + k), arguments={"k": k},
            error_class=cls, code=code, message=f"{tool} stopped: {reason}", attempts=3, effect_status="not_done",
            reason=reason, conversation_id=f"chat-s{k}", idempotency_key=f"tp1_stop{k:059x}"))
    return len(kinds)
