"""What the SQLite store's replaced-file check costs: one `os.stat` of the path before every statement,
against the same store with the check off, same file settings, same run (interleaved trials, medians).

    python benchmarks/bench_sqlite_file_check.py [--quick]

Rows: a journaled write's two statements (claim + settle) with synchronous NORMAL (no fsync: the check's
share is largest there) and FULL (the default), and the `os.stat` alone.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from toolproof.stores import SqliteStore
from toolproof.stores._intent import Intent


def _write(store: SqliteStore) -> None:
    key = uuid.uuid4().hex
    now = time.time()
    store.journal_claim(Intent(key=key, operation_id=key, tool="t", fingerprint="f", arguments={"n": 1},
                               status="in_flight", created_at=now, updated_at=now, owner="o", lease_until=now + 60))
    store.journal_finish(key, "o", "done", {"ok": True, "result": 1}, now)


def _us_per_write(store: SqliteStore, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        _write(store)
    return (time.perf_counter() - start) / n * 1e6


def run(quick: bool = False) -> list[dict[str, Any]]:
    n, trials = (200, 3) if quick else (2000, 7)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for sync in ("NORMAL", "FULL"):
            checked = SqliteStore(Path(tmp, f"checked-{sync}.sqlite3"), synchronous=sync, finish_synchronous=sync)
            plain = SqliteStore(Path(tmp, f"plain-{sync}.sqlite3"), synchronous=sync, finish_synchronous=sync)
            plain._file = None  # the baseline: the same store without the check
            count = n if sync == "NORMAL" else max(n // 10, 50)
            on, off = [], []
            for _ in range(trials):  # interleaved, so load on the machine hits both alike
                on.append(_us_per_write(checked, count))
                off.append(_us_per_write(plain, count))
            with_check, without = statistics.median(on), statistics.median(off)
            rows.append({"benchmark": "sqlite file check", "case": f"claim + settle, synchronous {sync}",
                         "value": with_check, "unit": "µs/write", "baseline": f"no check {without:.1f} µs",
                         "ratio": with_check / without, "note": f"{count} writes x {trials} trials, medians"})
            checked.close()
            plain.close()
        path = Path(tmp, "stat.sqlite3")
        path.touch()
        start = time.perf_counter()
        for _ in range(n * 10):
            os.stat(path)
        stat_us = (time.perf_counter() - start) / (n * 10) * 1e6
        rows.append({"benchmark": "sqlite file check", "case": "os.stat alone (2 per write)", "value": stat_us,
                     "unit": "µs", "baseline": "", "ratio": None, "note": ""})
    return rows


if __name__ == "__main__":
    from benchmarks._harness import print_rows

    print_rows("SQLite replaced-file check", run(quick="--quick" in sys.argv))
