"""What the hash chain over audit and stop records costs per write: the stores' own `append_audit` and
`add_stop_once` (chained: a locked read of the last digest, one SHA-256 per row) against the same store class
writing the same rows with the pre-chain statements, same run, interleaved trials, medians.

    python benchmarks/bench_audit_chain.py [--quick]

Rows: audit records in the writer's batches of 512 (µs per record) and single stop records (µs per stop), on a
SQLite file (synchronous FULL, the default) and, when one answers, PostgreSQL (TOOLPROOF_BENCH_POSTGRES_DSN,
else the test server on 127.0.0.1:5432), each store in its own schema.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolproof.stores import PostgresStore, SqliteStore, Store
from toolproof.stores._records import AuditRecord, StopRecord
from toolproof.stores._sql import AUDIT_COLUMNS, STOP_COLUMNS, _marks, audit_params, stop_params

BATCH = 512


def _records(n: int) -> list[AuditRecord]:
    now = time.time()
    return [AuditRecord(at=now, call_id=uuid.uuid4().hex, tool="lookup", schema_version="v1",
                        arguments={"crop": f"crop{i}", "note": "x" * 200}, validation="ok", attempt=1,
                        latency_ms=0.4, outcome="ok", conversation_id="c1", principal="p") for i in range(n)]


def _stop() -> StopRecord:
    return StopRecord(id=uuid.uuid4().hex, at=time.time(), tool="lookup", call_id=uuid.uuid4().hex,
                      arguments={"n": 1}, error_class="internal_error", code="TOOL_CRASHED", message="it crashed",
                      attempts=1, effect_status="not_done", reason="gave_up")


def _unchained(store: Any) -> tuple[Callable[[Sequence[AuditRecord]], None], Callable[[StopRecord], None]]:
    """The pre-chain statements on the same store: the baseline."""
    def audit(records: Sequence[AuditRecord]) -> None:
        store._run_many(f"INSERT INTO toolproof_audit ({AUDIT_COLUMNS}) VALUES ({_marks(19)})",
                        [audit_params(r) for r in records])

    def stop(s: StopRecord) -> None:
        store._run(f"INSERT INTO toolproof_stops ({STOP_COLUMNS}) VALUES ({_marks(20)}) ON CONFLICT (id) DO NOTHING",
                   stop_params(s))

    return audit, stop


def _time(fn: Callable[[], object], per: int) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) / per * 1e6


def _measure(label: str, chained: Store, plain: Store, batches: int, stops: int, trials: int) -> list[dict[str, Any]]:
    audit_off, stop_off = _unchained(plain)
    on_a, off_a, on_s, off_s = [], [], [], []
    for _ in range(trials):  # interleaved, so load on the machine hits both alike
        batch = _records(BATCH)
        on_a.append(_time(lambda b=batch: [chained.append_audit(b) for _ in range(batches)], batches * BATCH))
        off_a.append(_time(lambda b=batch: [audit_off(b) for _ in range(batches)], batches * BATCH))
        on_s.append(_time(lambda: [chained.add_stop_once(_stop()) for _ in range(stops)], stops))
        off_s.append(_time(lambda: [stop_off(_stop()) for _ in range(stops)], stops))
    rows = []
    for case, on, off, unit, per in (("audit record, batches of 512", on_a, off_a, "µs/record", batches * BATCH),
                                     ("stop record, one per write", on_s, off_s, "µs/stop", stops)):
        a, b = statistics.median(on), statistics.median(off)
        rows.append({"benchmark": "audit hash chain", "case": f"{case}; {label}", "value": a, "unit": unit,
                     "baseline": f"unchained {b:.1f} {unit}", "ratio": a / b,
                     "note": f"{per} x {trials} trials, medians"})
    return rows


def run(quick: bool = False) -> list[dict[str, Any]]:
    batches, stops, trials = (2, 50, 3) if quick else (8, 300, 5)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        chained, plain = SqliteStore(Path(tmp, "chained.sqlite3")), SqliteStore(Path(tmp, "plain.sqlite3"))
        rows += _measure("SQLite file, synchronous FULL", chained, plain, batches, stops, trials)
        chained.close()
        plain.close()
    from benchmarks.bench_journal import pg_dsn

    dsn = pg_dsn()
    if dsn is not None:
        import psycopg

        schemas = [f"tp_bench_chain_{uuid.uuid4().hex[:8]}" for _ in range(2)]
        sep = "&" if "?" in dsn else "?"
        chained_pg, plain_pg = (PostgresStore(f"{dsn}{sep}schema={s}") for s in schemas)
        try:
            rows += _measure("PostgreSQL", chained_pg, plain_pg, batches, stops, trials)
        finally:
            chained_pg.close()
            plain_pg.close()
            with psycopg.connect(dsn, autocommit=True) as conn:
                for s in schemas:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{s}" CASCADE')
    return rows


if __name__ == "__main__":
    from benchmarks._harness import print_rows

    print_rows("Audit hash chain", run(quick="--quick" in sys.argv))
