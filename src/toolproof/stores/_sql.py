"""What SQLite and PostgreSQL share: the versioned schema, the statements and row <-> record conversion.

Statements are written with `?` placeholders; the PostgreSQL store turns them into `%s`. Subclasses
provide `_run` (one statement, autocommit) and `_migrate`.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, Final

from ..contract._redaction import storable
from ._approval import ApprovalRequest, ApprovalStatus
from ._base import FinishStatus, Store
from ._chain import ChainKind, ChainReport, link, verify_rows
from ._intent import Intent, IntentStatus
from ._pins import Pin
from ._query import AuditQuery, AuditTally, Order, Page, StopGroup
from ._records import AuditRecord, EffectStatus, StopRecord

# Versioned migrations: (version, statements). Never edit a shipped entry; append a new one.
# {real} and {serial} are filled per dialect.
MIGRATIONS: Final[tuple[tuple[int, tuple[str, ...]], ...]] = (
    (1, (
        """CREATE TABLE IF NOT EXISTS toolproof_intents (
            key TEXT PRIMARY KEY,
            operation_id TEXT NOT NULL,
            tool TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            arguments TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL,
            owner TEXT NOT NULL,
            lease_until {real} NOT NULL,
            call_id TEXT,
            conversation_id TEXT,
            principal TEXT,
            outcome TEXT,
            resolution TEXT)""",
        # At most one live intent per operation: a second, different write of the same operation cannot
        # be claimed while the first is in flight, unknown or done (released intents are deleted).
        "CREATE UNIQUE INDEX IF NOT EXISTS toolproof_intents_operation ON toolproof_intents (operation_id)",
        # Only the rows a person must look at are indexed by status, so claims and settlements stay cheap;
        # `prune` and listing other statuses scan, which is fine for a maintenance command.
        "CREATE INDEX IF NOT EXISTS toolproof_intents_unknown ON toolproof_intents (created_at)"
        " WHERE status = 'unknown'",
        """CREATE TABLE IF NOT EXISTS toolproof_audit (
            id {serial},
            at {real} NOT NULL,
            call_id TEXT NOT NULL,
            tool TEXT NOT NULL,
            schema_version TEXT,
            arguments TEXT,
            validation TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            latency_ms {real} NOT NULL,
            outcome TEXT NOT NULL,
            run_id TEXT,
            conversation_id TEXT,
            principal TEXT,
            failing_fields TEXT NOT NULL,
            error_class TEXT,
            code TEXT,
            idempotency_key TEXT)""",
        "CREATE INDEX IF NOT EXISTS toolproof_audit_tool ON toolproof_audit (tool, id)",
        """CREATE TABLE IF NOT EXISTS toolproof_stops (
            id TEXT PRIMARY KEY,
            at {real} NOT NULL,
            tool TEXT NOT NULL,
            call_id TEXT NOT NULL,
            arguments TEXT,
            error_class TEXT NOT NULL,
            code TEXT NOT NULL,
            message TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            effect_status TEXT NOT NULL,
            reason TEXT NOT NULL,
            run_id TEXT,
            conversation_id TEXT,
            idempotency_key TEXT,
            resolved_at {real},
            resolution TEXT,
            extra TEXT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS toolproof_stops_at ON toolproof_stops (at)",
        "CREATE INDEX IF NOT EXISTS toolproof_stops_key ON toolproof_stops (idempotency_key)",
    )),
    # A tool's own exception (type, message, traceback; redacted, bounded) for its developer. `audit show`
    # finds a call's stops by index; its audit rows by a scan (no index slows the hot writer for a
    # maintenance command).
    (2, (
        *(f"ALTER TABLE {table} ADD COLUMN {column} TEXT"
          for table in ("toolproof_audit", "toolproof_stops")
          for column in ("exception_type", "exception_message", "traceback")),
        "CREATE INDEX IF NOT EXISTS toolproof_stops_call ON toolproof_stops (call_id)",
    )),
    # Approval requests (the approval gate): one row per gated call, decided once by a conditional UPDATE.
    (3, (
        """CREATE TABLE IF NOT EXISTS toolproof_approvals (
            id TEXT PRIMARY KEY,
            at {real} NOT NULL,
            tool TEXT NOT NULL,
            call_id TEXT NOT NULL,
            arguments TEXT,
            idempotency_key TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            reason TEXT NOT NULL,
            expires_at {real} NOT NULL,
            status TEXT NOT NULL,
            run_id TEXT,
            conversation_id TEXT,
            principal TEXT,
            decided_by TEXT,
            decided_at {real},
            note TEXT)""",
        "CREATE INDEX IF NOT EXISTS toolproof_approvals_at ON toolproof_approvals (at)",
    )),
    (4, (
        # Reviewed upstream tool definitions: the gateway's drift check (stores/_pins.py).
        """CREATE TABLE IF NOT EXISTS toolproof_pins (
            upstream TEXT NOT NULL,
            tool TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            definition TEXT NOT NULL,
            pinned_at {real} NOT NULL,
            pending_fingerprint TEXT,
            pending TEXT,
            changes TEXT NOT NULL,
            seen_at {real},
            note TEXT,
            PRIMARY KEY (upstream, tool))""",
    )),
    # The operator's console finds a call or an operation by the id a person pastes, in any case, among
    # every record (not a window of the newest): a prefix of the lowered id, by index. {ops} is the
    # dialect's operator class for LIKE 'prefix%' (PostgreSQL); SQLite answers a range on the lowered id.
    (5, (
        "CREATE INDEX IF NOT EXISTS toolproof_audit_call ON toolproof_audit (lower(call_id){ops})",
        "CREATE INDEX IF NOT EXISTS toolproof_audit_key ON toolproof_audit (lower(idempotency_key){ops})",
        "CREATE INDEX IF NOT EXISTS toolproof_approvals_key ON toolproof_approvals (idempotency_key)",
    )),
    # The hash chain (chain.py): each audit and stop row carries the digest of the row before it and its own;
    # stops are chained in their own sequence (their ids are not ordered).
    (6, (
        *(f"ALTER TABLE {table} ADD COLUMN {column} TEXT"
          for table in ("toolproof_audit", "toolproof_stops") for column in ("chain_prev", "chain")),
        "ALTER TABLE toolproof_stops ADD COLUMN chain_seq BIGINT",
        "CREATE UNIQUE INDEX IF NOT EXISTS toolproof_stops_chain ON toolproof_stops (chain_seq)",
    )),
)
SCHEMA_VERSION: Final = MIGRATIONS[-1][0]
#: Runs one statement once per parameter row inside `SqlStore._chained`: (total rowcount, rows fetched).
ChainRun = Callable[[str, Sequence[Sequence[Any]]], tuple[int, list[tuple[Any, ...]]]]

INTENT_COLUMNS: Final = (
    "key, operation_id, tool, fingerprint, arguments, status, created_at, updated_at, owner, lease_until,"
    " call_id, conversation_id, principal, outcome, resolution"
)
AUDIT_COLUMNS: Final = (
    "at, call_id, tool, schema_version, arguments, validation, attempt, latency_ms, outcome, run_id,"
    " conversation_id, principal, failing_fields, error_class, code, idempotency_key, exception_type,"
    " exception_message, traceback"
)
STOP_COLUMNS: Final = (
    "id, at, tool, call_id, arguments, error_class, code, message, attempts, effect_status, reason, run_id,"
    " conversation_id, idempotency_key, resolved_at, resolution, extra, exception_type, exception_message, traceback"
)

# What a stop's digest covers: all it says when written, not its resolution (resolved_at, resolution,
# effect_status are updated when a person resolves it).
STOP_CHAIN_COLUMNS: Final = (
    "id, at, tool, call_id, arguments, error_class, code, message, attempts, reason, run_id,"
    " conversation_id, idempotency_key, extra, exception_type, exception_message, traceback"
)
_STOP_CHAINED: Final = tuple(i for i, c in enumerate(STOP_COLUMNS.split(",")) if c.strip() in
                             {x.strip() for x in STOP_CHAIN_COLUMNS.split(",")})
#: Rows read per statement when a chain is verified.
CHAIN_PAGE: Final = 5_000

APPROVAL_COLUMNS: Final = (
    "id, at, tool, call_id, arguments, idempotency_key, fingerprint, reason, expires_at, status, run_id,"
    " conversation_id, principal, decided_by, decided_at, note"
)

SQL_CLAIM: Final = (
    f"INSERT INTO toolproof_intents ({INTENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT DO NOTHING"
)
SQL_GET: Final = f"SELECT {INTENT_COLUMNS} FROM toolproof_intents WHERE key = ?"
SQL_FOR_OPERATION: Final = f"SELECT {INTENT_COLUMNS} FROM toolproof_intents WHERE operation_id = ?"
SQL_FINISH: Final = (
    "UPDATE toolproof_intents SET status = ?, outcome = ?, updated_at = ?"
    " WHERE key = ? AND owner = ? AND status = 'in_flight'"
)
SQL_RELEASE: Final = "DELETE FROM toolproof_intents WHERE key = ? AND owner = ? AND status = 'in_flight'"
SQL_RENEW: Final = (
    "UPDATE toolproof_intents SET lease_until = ? WHERE key = ? AND owner = ? AND status IN ('in_flight', 'unknown')"
)
SQL_EXPIRE: Final = (
    "UPDATE toolproof_intents SET status = 'unknown', updated_at = ? WHERE status = 'in_flight' AND lease_until < ?"
)


def migrate(execute: Callable[..., Any], *, real: str, serial: str, mark: str, ops: str = "") -> None:
    """Bring the schema to the newest version with `execute(sql[, params])` inside the caller's transaction,
    which also holds the dialect's lock, so two processes never apply one migration twice. `mark` is the
    dialect's placeholder, `ops` its operator class for prefix indexes."""
    execute("CREATE TABLE IF NOT EXISTS toolproof_schema (version INTEGER NOT NULL)")
    row = execute("SELECT MAX(version) FROM toolproof_schema").fetchone()
    current = (row[0] if row else None) or 0
    for version, statements in MIGRATIONS:
        if version > current:
            for statement in statements:
                execute(statement.format(real=real, serial=serial, ops=ops))
            execute(f"INSERT INTO toolproof_schema (version) VALUES ({mark})", (version,))


def storable_params(params: Sequence[Any]) -> Sequence[Any]:
    """The parameters with the text no database can hold (NUL, lone surrogates) as U+FFFD, the one rule
    (`storable`) applied to writes and lookups alike, so a value reads back as written and is found by itself."""
    for value in params:
        if type(value) is str and ("\x00" in value or not value.isascii()):
            return tuple(storable(v) if isinstance(v, str) else v for v in params)
    return params


# `json.dumps` with options builds this encoder on every call; built once it writes the same text for less
# (a journal row's arguments: 6.3 -> 3.0 us, best of 5 x 100,000 on a loaded 2-core VM); every stored row
# and audit record goes through it.
_ENCODE: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def dumps(value: Any) -> str:
    return _ENCODE(value)


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def intent_params(i: Intent) -> tuple[Any, ...]:
    return (i.key, i.operation_id, i.tool, i.fingerprint, dumps(i.arguments), i.status, i.created_at,
            i.updated_at, i.owner, i.lease_until, i.call_id, i.conversation_id, i.principal,
            None if i.outcome is None else dumps(i.outcome), i.resolution)


def intent_from_row(row: Sequence[Any]) -> Intent:
    return Intent(key=row[0], operation_id=row[1], tool=row[2], fingerprint=row[3], arguments=loads(row[4]),
                  status=row[5], created_at=float(row[6]), updated_at=float(row[7]), owner=row[8],
                  lease_until=float(row[9]), call_id=row[10], conversation_id=row[11], principal=row[12],
                  outcome=loads(row[13]), resolution=row[14])


def audit_params(r: AuditRecord) -> tuple[Any, ...]:
    return (r.at, r.call_id, r.tool, r.schema_version, dumps(r.arguments), r.validation, r.attempt, r.latency_ms,
            r.outcome, r.run_id, r.conversation_id, r.principal,
            dumps(list(r.failing_fields)) if r.failing_fields else "[]", r.error_class,
            r.code, r.idempotency_key, r.exception_type, r.exception_message, r.traceback)


def audit_from_row(row: Sequence[Any]) -> AuditRecord:
    return AuditRecord(at=float(row[0]), call_id=row[1], tool=row[2], schema_version=row[3], arguments=loads(row[4]),
                       validation=row[5], attempt=int(row[6]), latency_ms=float(row[7]), outcome=row[8],
                       run_id=row[9], conversation_id=row[10], principal=row[11],
                       failing_fields=tuple(loads(row[12]) or ()), error_class=row[13], code=row[14],
                       idempotency_key=row[15], exception_type=row[16], exception_message=row[17],
                       traceback=row[18])


def stop_params(s: StopRecord) -> tuple[Any, ...]:
    return (s.id, s.at, s.tool, s.call_id, dumps(s.arguments), s.error_class, s.code, s.message, s.attempts,
            s.effect_status, s.reason, s.run_id, s.conversation_id, s.idempotency_key, s.resolved_at, s.resolution,
            dumps(s.extra), s.exception_type, s.exception_message, s.traceback)


def stop_from_row(row: Sequence[Any]) -> StopRecord:
    return StopRecord(id=row[0], at=float(row[1]), tool=row[2], call_id=row[3], arguments=loads(row[4]),
                      error_class=row[5], code=row[6], message=row[7], attempts=int(row[8]), effect_status=row[9],
                      reason=row[10], run_id=row[11], conversation_id=row[12], idempotency_key=row[13],
                      resolved_at=None if row[14] is None else float(row[14]), resolution=row[15],
                      extra=loads(row[16]) or {}, exception_type=row[17], exception_message=row[18],
                      traceback=row[19])


def approval_params(a: ApprovalRequest) -> tuple[Any, ...]:
    return (a.id, a.at, a.tool, a.call_id, dumps(a.arguments), a.idempotency_key, a.fingerprint, a.reason,
            a.expires_at, a.status, a.run_id, a.conversation_id, a.principal, a.decided_by, a.decided_at, a.note)


def approval_from_row(row: Sequence[Any]) -> ApprovalRequest:
    return ApprovalRequest(id=row[0], at=float(row[1]), tool=row[2], call_id=row[3], arguments=loads(row[4]),
                           idempotency_key=row[5], fingerprint=row[6], reason=row[7], expires_at=float(row[8]),
                           status=row[9], run_id=row[10], conversation_id=row[11], principal=row[12],
                           decided_by=row[13], decided_at=None if row[14] is None else float(row[14]), note=row[15])


PIN_COLUMNS: Final = ("upstream, tool, fingerprint, definition, pinned_at, pending_fingerprint, pending, changes,"
                      " seen_at, note")


def pin_params(p: Pin) -> tuple[Any, ...]:
    return (p.upstream, p.tool, p.fingerprint, dumps(p.definition), p.pinned_at, p.pending_fingerprint,
            None if p.pending is None else dumps(p.pending), dumps(p.changes), p.seen_at, p.note)


def pin_from_row(row: Sequence[Any]) -> Pin:
    return Pin(upstream=row[0], tool=row[1], fingerprint=row[2], definition=loads(row[3]), pinned_at=float(row[4]),
               pending_fingerprint=row[5], pending=loads(row[6]), changes=loads(row[7]) or [],
               seen_at=None if row[8] is None else float(row[8]), note=row[9])


class SqlStore(Store):
    """The Store methods as SQL; a subclass supplies the connection."""

    @abstractmethod
    def _run(self, sql: str, params: Sequence[Any] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        """Run one statement in its own transaction: (rowcount, fetched rows)."""

    @abstractmethod
    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for many parameter rows in one transaction."""

    @abstractmethod
    def _chained(self, write: Callable[[ChainRun], int]) -> int:
        """Run `write` in one transaction that holds this store's chain lock (writers of the same chain in other
        processes wait), with a `ChainRun(sql, params_rows)` that runs a statement once per parameter row and
        returns (rowcount, fetched rows); `write`'s result is returned."""

    def schema_version(self) -> int:
        _, rows = self._run("SELECT MAX(version) FROM toolproof_schema")
        return int(rows[0][0] or 0)

    # --- audit ----------------------------------------------------------------------------------------------
    def append_audit(self, records: Sequence[AuditRecord]) -> None:
        if not records:
            return
        rows = [storable_params(audit_params(r)) for r in records]

        def write(run: ChainRun) -> int:
            _, last = run("SELECT chain FROM toolproof_audit ORDER BY id DESC LIMIT 1", [()])
            prev = (last[0][0] if last else None) or ""
            chained = []
            for row in rows:
                digest = link(prev, row)
                chained.append((*row, prev, digest))
                prev = digest
            return run(f"INSERT INTO toolproof_audit ({AUDIT_COLUMNS}, chain_prev, chain) VALUES ({_marks(21)})",
                       chained)[0]

        self._chained(write)

    def verify_chain(self, kind: ChainKind, *, anchors: Sequence[str] = ()) -> ChainReport:
        """Walk the audit or stop chain from its first row (in pages) and report the first broken link."""
        return verify_rows(kind, self._chain_rows(kind), anchors)

    def _chain_rows(self, kind: ChainKind) -> Iterator[tuple[str, str | None, str | None, Sequence[Any]]]:
        if kind == "audit":
            order, cols, pick = "id", AUDIT_COLUMNS, None
        else:
            order, cols, pick = "chain_seq", STOP_COLUMNS, _STOP_CHAINED
        after: Any = -1
        table = "toolproof_audit" if kind == "audit" else "toolproof_stops"
        if kind == "stops":  # stops from before the chain first (no sequence), then the chain in order
            _, rows = self._run(f"SELECT id, chain_prev, chain, {cols} FROM toolproof_stops WHERE chain_seq IS NULL"
                                " ORDER BY at")
            for row in rows:
                yield str(row[0]), row[1], row[2], [row[3 + i] for i in pick or ()]
        while True:
            _, rows = self._run(f"SELECT {order}, chain_prev, chain, {cols} FROM {table} WHERE {order} > ?"
                                f" ORDER BY {order} LIMIT ?", (after, CHAIN_PAGE))
            for row in rows:
                values = list(row[3:]) if pick is None else [row[3 + i] for i in pick]
                yield (str(row[0]) if kind == "audit" else str(row[3])), row[1], row[2], values
            if len(rows) < CHAIN_PAGE:
                return
            after = rows[-1][0]

    def list_audit(
        self, *, limit: int = 100, tool: str | None = None, call_id: str | None = None
    ) -> list[AuditRecord]:
        where, params = _where(tool=tool, call_id=call_id)
        _, rows = self._run(f"SELECT {AUDIT_COLUMNS} FROM toolproof_audit {where} ORDER BY id DESC LIMIT ?",
                            (*params, limit))
        return [audit_from_row(r) for r in rows]

    def field_failures(self) -> list[tuple[str, str, str | None, int]]:
        _, rows = self._run("SELECT tool, failing_fields, schema_version FROM toolproof_audit"
                            " WHERE validation = 'failed'")
        counts: Counter[tuple[str, str, str | None]] = Counter()
        for tool, fields, version in rows:
            for name in loads(fields) or ("<arguments>",):
                counts[(tool, name, version)] += 1
        return [(t, f, v, n) for (t, f, v), n in counts.most_common()]

    # --- the console's pages (`query.py`): keyset cursors over the whole table, counted ------------------------
    def audit_page(self, query: AuditQuery, *, order: Order = "newest", limit: int = 50,
                   cursor: str | None = None) -> Page[AuditRecord]:
        """Keyset on the row id: `id < cursor` (newest first) or `id > cursor`, so a page deep in a large store
        costs what the first one does; `total` and `start` are counted with the same WHERE."""
        conds, params = self._audit_where(query)
        newest = order == "newest"
        pos = int(cursor) if cursor and cursor.isdigit() else None
        page_conds = conds + ([f"id {'<' if newest else '>'} ?"] if pos is not None else [])
        page_params = params + ([pos] if pos is not None else [])
        _, rows = self._run(f"SELECT id, {AUDIT_COLUMNS} FROM toolproof_audit {_and(page_conds)}"
                            f" ORDER BY id {'DESC' if newest else 'ASC'} LIMIT ?", (*page_params, limit + 1))
        total = self._count("toolproof_audit", conds, params)
        start = 0 if pos is None else self._count("toolproof_audit", [*conds, f"id {'>=' if newest else '<='} ?"],
                                                  [*params, pos])
        shown = rows[:limit]
        more = len(rows) > limit
        return Page([audit_from_row(r[1:]) for r in shown], total, start, str(shown[-1][0]) if more else None)

    def audit_total(self) -> int:
        return self._count("toolproof_audit", [], [])

    def audit_for_key(self, key: str) -> list[AuditRecord]:
        # By the index on the lowered key alone (with `AND idempotency_key = ?` too, SQLite 3.40 scans), then
        # the exact key.
        _, rows = self._run(f"SELECT {AUDIT_COLUMNS} FROM toolproof_audit WHERE lower(idempotency_key) = ?"
                            " ORDER BY id", (key.lower(),))
        return [r for r in map(audit_from_row, rows) if r.idempotency_key == key]

    def audit_for_call(self, call_id: str) -> list[AuditRecord]:
        _, rows = self._run(f"SELECT {AUDIT_COLUMNS} FROM toolproof_audit WHERE lower(call_id) = ? ORDER BY id",
                            (call_id.lower(),))
        return [r for r in map(audit_from_row, rows) if r.call_id == call_id]

    #: How this dialect matches a pattern ignoring case (SQLite's LIKE ignores ASCII case already).
    _ILIKE = "LIKE"

    def _prefix(self, column: str, text: str) -> tuple[str, list[Any]]:
        """`lower(column)` starts with `text` lowered, in a form the index on `lower(column)` answers: a range
        (SQLite; PostgreSQL overrides it with LIKE on its pattern index)."""
        low = text.lower()
        return f"(lower({column}) >= ? AND lower({column}) < ?)", [low, low + "\U0010ffff"]

    def _audit_where(self, q: AuditQuery) -> tuple[list[str], list[Any]]:
        """The WHERE conditions of `AuditQuery.matches`, and their parameters."""
        conds: list[str] = []
        params: list[Any] = []
        if q.text:
            parts = [self._prefix(c, q.text) for c in q.TEXT_FIELDS]
            conds.append("(" + " OR ".join(sql for sql, _ in parts) + ")")
            params += [p for _, ps in parts for p in ps]
        for name in q.FIELDS:
            value = getattr(q, name)
            if value:
                conds.append(f"{name} {self._ILIKE} ? ESCAPE '\\'")
                params.append(_like(value))
        if q.since is not None:
            conds.append("at >= ?")
            params.append(q.since)
        if q.until is not None:
            conds.append("at < ?")
            params.append(q.until)
        return conds, params

    def audit_tally(self, after: int = 0) -> tuple[list[AuditTally], int]:
        _, top = self._run("SELECT MAX(id) FROM toolproof_audit")
        upto = int(top[0][0] or 0)
        _, rows = self._run("SELECT tool, error_class, code, outcome, COUNT(*) FROM toolproof_audit"
                            " WHERE schema_version IS NOT NULL AND id > ? AND id <= ?"
                            " GROUP BY tool, error_class, code, outcome", (after, upto))
        return [AuditTally(r[0], r[1], r[2], r[3], int(r[4])) for r in rows], max(upto, after)

    def approval_page(self, *, pending: bool, now: float, limit: int = 50,
                      cursor: str | None = None) -> Page[ApprovalRequest]:
        """Waiting requests by (expires_at, id) ascending; decided and expired ones by (when decided, else
        when expired; id) descending. The cursor is the last row's key as JSON."""
        live = "status = 'pending' AND expires_at >= ?"
        if pending:
            conds, params, sort, desc = [live], [now], "expires_at", False
        else:
            conds, params, sort, desc = [f"NOT ({live})"], [now], "COALESCE(decided_at, expires_at)", True
        after = _cursor(cursor)
        page_conds, page_params = list(conds), list[Any](params)
        if after is not None:
            page_conds.append(_beyond(sort, desc))
            page_params += [after[0], after[0], after[1]]
        way = "DESC" if desc else "ASC"
        _, rows = self._run(f"SELECT {APPROVAL_COLUMNS}, {sort} FROM toolproof_approvals {_and(page_conds)}"
                            f" ORDER BY {sort} {way}, id {way} LIMIT ?", (*page_params, limit + 1))
        total = self._count("toolproof_approvals", conds, params)
        start = 0 if after is None else total - self._count("toolproof_approvals", page_conds, page_params)
        shown = rows[:limit]
        more = len(rows) > limit
        return Page([approval_from_row(r) for r in shown], total, start,
                    dumps([float(shown[-1][-1]), shown[-1][0]]) if more else None)

    def approvals_for_key(self, key: str) -> list[ApprovalRequest]:
        _, rows = self._run(f"SELECT {APPROVAL_COLUMNS} FROM toolproof_approvals WHERE idempotency_key = ?"
                            " ORDER BY at", (key,))
        return [approval_from_row(r) for r in rows]

    def stop_page(self, *, limit: int = 50, cursor: str | None = None,
                  group: tuple[str, str, str, str] | None = None) -> Page[StopRecord]:
        conds, params = ["resolved_at IS NULL"], list[Any]()
        if group is not None:
            conds += ["tool = ?", "error_class = ?", "code = ?", "reason = ?"]
            params += list(group)
        after = _cursor(cursor)
        page_conds, page_params = list(conds), list[Any](params)
        if after is not None:
            page_conds.append(_beyond("at", True))
            page_params += [after[0], after[0], after[1]]
        _, rows = self._run(f"SELECT {STOP_COLUMNS} FROM toolproof_stops {_and(page_conds)}"
                            " ORDER BY at DESC, id DESC LIMIT ?", (*page_params, limit + 1))
        total = self._count("toolproof_stops", conds, params)
        start = 0 if after is None else total - self._count("toolproof_stops", page_conds, page_params)
        shown = rows[:limit]
        more = len(rows) > limit
        return Page([stop_from_row(r) for r in shown], total, start,
                    dumps([float(shown[-1][1]), shown[-1][0]]) if more else None)

    def stop_groups(self) -> list[StopGroup]:
        _, rows = self._run("SELECT tool, error_class, code, reason, COUNT(*), MIN(at), MAX(at) FROM toolproof_stops"
                            " WHERE resolved_at IS NULL GROUP BY tool, error_class, code, reason"
                            " ORDER BY COUNT(*) DESC, tool, code")
        return [StopGroup(r[0], r[1], r[2], r[3], int(r[4]), float(r[5]), float(r[6])) for r in rows]

    def stops_for_key(self, key: str) -> list[StopRecord]:
        _, rows = self._run(f"SELECT {STOP_COLUMNS} FROM toolproof_stops WHERE idempotency_key = ? ORDER BY at",
                            (key,))
        return [stop_from_row(r) for r in rows]

    def _count(self, table: str, conds: Sequence[str], params: Sequence[Any]) -> int:
        _, rows = self._run(f"SELECT COUNT(*) FROM {table} {_and(conds)}", params)
        return int(rows[0][0])

    # --- stops ----------------------------------------------------------------------------------------------
    def add_stop(self, stop: StopRecord) -> None:
        cols = STOP_COLUMNS.replace("id, ", "", 1)
        sets = ", ".join(f"{c.strip()} = excluded.{c.strip()}" for c in cols.split(","))
        self._add_stop(stop, f"DO UPDATE SET {sets}")  # a stop written again keeps its link: it reads as edited

    def add_stop_once(self, stop: StopRecord) -> bool:
        return self._add_stop(stop, "DO NOTHING") == 1

    def _add_stop(self, stop: StopRecord, on_conflict: str) -> int:
        row = storable_params(stop_params(stop))

        def write(run: ChainRun) -> int:
            _, last = run("SELECT chain, chain_seq FROM toolproof_stops WHERE chain_seq IS NOT NULL"
                          " ORDER BY chain_seq DESC LIMIT 1", [()])
            prev, seq = (last[0][0] or "", int(last[0][1])) if last else ("", 0)
            digest = link(prev, [row[i] for i in _STOP_CHAINED])
            return run(f"INSERT INTO toolproof_stops ({STOP_COLUMNS}, chain_prev, chain, chain_seq)"
                       f" VALUES ({_marks(23)}) ON CONFLICT (id) {on_conflict}", [(*row, prev, digest, seq + 1)])[0]

        return self._chained(write)

    def list_stops(
        self, *, resolved: bool | None = None, limit: int = 100, call_id: str | None = None
    ) -> list[StopRecord]:
        where, params = _where(call_id=call_id)
        if resolved is not None:
            where += (" AND " if where else "WHERE ") + f"resolved_at IS {'NOT ' if resolved else ''}NULL"
        _, rows = self._run(f"SELECT {STOP_COLUMNS} FROM toolproof_stops {where} ORDER BY at DESC LIMIT ?",
                            (*params, limit))
        return [stop_from_row(r) for r in rows]

    def get_stop(self, stop_id: str) -> StopRecord | None:
        _, rows = self._run(f"SELECT {STOP_COLUMNS} FROM toolproof_stops WHERE id = ?", (stop_id,))
        return stop_from_row(rows[0]) if rows else None

    def resolve_stop(
        self, stop_id: str, *, resolution: str, effect_status: EffectStatus | None = None
    ) -> StopRecord | None:
        from time import time

        self._run("UPDATE toolproof_stops SET resolved_at = ?, resolution = ?,"
                  " effect_status = COALESCE(?, effect_status) WHERE id = ?",
                  (time(), resolution, effect_status, stop_id))
        return self.get_stop(stop_id)

    def resolve_stops_for_key(self, key: str, *, resolution: str, effect_status: EffectStatus) -> int:
        from time import time

        count, _ = self._run("UPDATE toolproof_stops SET resolved_at = ?, resolution = ?, effect_status = ?"
                             " WHERE idempotency_key = ? AND resolved_at IS NULL",
                             (time(), resolution, effect_status, key))
        return count

    # --- approvals --------------------------------------------------------------------------------------------
    def approval_add(self, request: ApprovalRequest) -> bool:
        count, _ = self._run(f"INSERT INTO toolproof_approvals ({APPROVAL_COLUMNS}) VALUES ({_marks(16)})"
                             " ON CONFLICT DO NOTHING", approval_params(request))
        return count == 1

    def approval_get(self, request_id: str) -> ApprovalRequest | None:
        _, rows = self._run(f"SELECT {APPROVAL_COLUMNS} FROM toolproof_approvals WHERE id = ?", (request_id,))
        return approval_from_row(rows[0]) if rows else None

    def approval_list(self, *, status: ApprovalStatus | None = None, limit: int = 100) -> list[ApprovalRequest]:
        where, params = ("WHERE status = ?", (status,)) if status is not None else ("", ())
        _, rows = self._run(f"SELECT {APPROVAL_COLUMNS} FROM toolproof_approvals {where} ORDER BY at DESC LIMIT ?",
                            (*params, limit))
        return [approval_from_row(r) for r in rows]

    def approval_decide(
        self, request_id: str, status: ApprovalStatus, *, by: str, note: str | None, now: float
    ) -> bool:
        live = "" if status == "expired" else " AND expires_at >= ?"
        params = (status, by, now, note, request_id) + (() if status == "expired" else (now,))
        count, _ = self._run("UPDATE toolproof_approvals SET status = ?, decided_by = ?, decided_at = ?, note = ?"
                             f" WHERE id = ? AND status = 'pending'{live}", params)
        return count == 1

    # --- pins -------------------------------------------------------------------------------------------------
    def pin_claim(self, pin: Pin) -> Pin:
        self._run(f"INSERT INTO toolproof_pins ({PIN_COLUMNS}) VALUES ({_marks(10)}) ON CONFLICT DO NOTHING",
                  pin_params(pin))
        _, rows = self._run(f"SELECT {PIN_COLUMNS} FROM toolproof_pins WHERE upstream = ? AND tool = ?",
                            (pin.upstream, pin.tool))
        return pin_from_row(rows[0])

    def pin_put(self, pin: Pin) -> None:
        sets = ", ".join(f"{c.strip()} = excluded.{c.strip()}" for c in PIN_COLUMNS.split(",")[2:])
        self._run(f"INSERT INTO toolproof_pins ({PIN_COLUMNS}) VALUES ({_marks(10)})"
                  f" ON CONFLICT (upstream, tool) DO UPDATE SET {sets}", pin_params(pin))

    def pin_list(self, *, upstream: str | None = None) -> list[Pin]:
        where, params = ("WHERE upstream = ?", (upstream,)) if upstream is not None else ("", ())
        _, rows = self._run(f"SELECT {PIN_COLUMNS} FROM toolproof_pins {where} ORDER BY upstream, tool", params)
        return [pin_from_row(r) for r in rows]

    # --- journal ----------------------------------------------------------------------------------------------
    def journal_claim(self, intent: Intent) -> bool:
        count, _ = self._run(SQL_CLAIM, intent_params(intent))
        return count == 1

    def journal_get(self, key: str) -> Intent | None:
        _, rows = self._run(SQL_GET, (key,))
        return intent_from_row(rows[0]) if rows else None

    def journal_for_operation(self, operation_id: str) -> Intent | None:
        _, rows = self._run(SQL_FOR_OPERATION, (operation_id,))
        return intent_from_row(rows[0]) if rows else None

    def journal_finish(self, key: str, owner: str, status: FinishStatus, outcome: Any, now: float) -> bool:
        count, _ = self._run(SQL_FINISH, (status, None if outcome is None else dumps(outcome), now, key, owner))
        return count == 1

    def journal_release(self, key: str, owner: str) -> bool:
        count, _ = self._run(SQL_RELEASE, (key, owner))
        return count == 1

    def journal_renew(self, key: str, owner: str, lease_until: float) -> bool:
        count, _ = self._run(SQL_RENEW, (lease_until, key, owner))
        return count == 1

    def journal_expire(self, now: float, key: str | None = None) -> int:
        if key is None:
            count, _ = self._run(SQL_EXPIRE, (now, now))
        else:
            count, _ = self._run(SQL_EXPIRE + " AND key = ?", (now, now, key))
        return count

    def journal_resolve(self, key: str, *, done: bool, outcome: Any, resolution: str, now: float) -> Intent | None:
        row = self.journal_get(key)
        if row is None:
            return None
        if done:
            self._run("UPDATE toolproof_intents SET status = 'done', outcome = ?, resolution = ?, updated_at = ?"
                      " WHERE key = ?", (None if outcome is None else dumps(outcome), resolution, now, key))
            return self.journal_get(key)
        self._run("DELETE FROM toolproof_intents WHERE key = ?", (key,))
        return replace(row, resolution=resolution, updated_at=now)

    def journal_list(self, *, status: IntentStatus | None = None, limit: int = 100) -> list[Intent]:
        where, params = ("WHERE status = ?", (status,)) if status is not None else ("", ())
        _, rows = self._run(f"SELECT {INTENT_COLUMNS} FROM toolproof_intents {where}"
                            " ORDER BY created_at DESC LIMIT ?", (*params, limit))
        return [intent_from_row(r) for r in rows]

    def journal_prune(self, before: float, key: str | None = None) -> int:
        only, params = ("", (before,)) if key is None else (" AND key = ?", (before, key))
        count, _ = self._run("DELETE FROM toolproof_intents WHERE status IN ('done', 'failed') AND updated_at < ?"
                             + only, params)
        return count


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _and(conds: Sequence[str]) -> str:
    return "WHERE " + " AND ".join(conds) if conds else ""


def _like(text: str) -> str:
    """A LIKE pattern for `text` as a prefix, ignoring case (see `query.prefix_of`), its wildcards escaped."""
    return text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _beyond(sort: str, desc: bool) -> str:
    """The keyset condition "after the cursor's (sort, id)" in this order; parameters: value, value, id."""
    op = "<" if desc else ">"
    return f"({sort} {op} ? OR ({sort} = ? AND id {op} ?))"


def _cursor(cursor: str | None) -> tuple[float, str] | None:
    """A (sort value, id) cursor as `approval_page` and `stop_page` wrote it; None for a malformed one."""
    if not cursor:
        return None
    try:
        value, key = json.loads(cursor)
        return float(value), str(key)
    except (ValueError, TypeError):
        return None


def _where(**equal: str | None) -> tuple[str, tuple[str, ...]]:
    """`WHERE a = ? AND b = ?` for the given columns that are not None, and their values."""
    given = {column: value for column, value in equal.items() if value is not None}
    if not given:
        return "", ()
    return "WHERE " + " AND ".join(f"{column} = ?" for column in given), tuple(given.values())
