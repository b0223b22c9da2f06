"""What the operator's console costs at scale: each page's server time (p50, p95) over a store of 100,000 audit
records, against the same page over 1,000 records in the same run (the ratio shows whether a page grows with the
store), served by a real `toolproof ui` and fetched over HTTP.

    python -m benchmarks.bench_inbox [--quick] [--postgres]

A SQLite file by default; `--postgres` fills a schema of its own on the PostgreSQL server the tests use
($TOOLPROOF_TEST_POSTGRES_DSN, else the local one), dropped afterwards.

Both stores are filled the way agents fill them (tests/inbox/_fill.py: eight tools, failures, gated calls,
267 waiting approvals, alike stops). The p95 target is 300 ms at 100,000 records.
"""

from __future__ import annotations

import html
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.inbox._fill import fill
from tests.inbox.conftest import serve
from tests.pg_support import drop_schema, postgres_server, unique_schema, with_schema


def _pages(call_id: str, key: str) -> dict[str, str]:
    return {"approvals": "/approvals", "audit": "/audit",
            "audit: id piece": f"/audit?q={call_id[:10].upper()}", "audit: tool, any case": "/audit?tool=WEATHER",
            "audit: time range": "/audit?since=2020-01-01T00:00%2B01:00&until=2100-01-01",
            "audit: oldest first": "/audit?order=oldest", "call": f"/audit/call/{call_id}", "trail": f"/trail/{key}",
            "stops": "/stops", "dashboard": "/dashboard", "version poll": "/api/version"}


def _times(base: str, pages: dict[str, str], n: int) -> dict[str, list[float]]:
    with httpx.Client(base_url=base, timeout=60) as client:
        third = "/approvals"  # the third page of approvals: follow "Next" twice
        for _ in range(2):
            found = re.search(r'href="([^"]+)" data-testid="pending-next"', client.get(third).text)
            assert found, "no next page of approvals"
            third = html.unescape(found[1])
        pages = {**pages, "approvals page 3": third}
        out: dict[str, list[float]] = {name: [] for name in pages}
        for name in pages:
            client.get(pages[name])  # warm
        for _ in range(n):
            for name, path in pages.items():  # interleaved, so load on the machine hits every page alike
                start = time.perf_counter()
                r = client.get(path)
                out[name].append((time.perf_counter() - start) * 1000)
                assert r.status_code == 200, (path, r.status_code)
    return out


def _p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1] if len(xs) >= 2 else xs[0]


@contextmanager
def _store_url(kind: str, records: int, tmp: str) -> Iterator[str]:
    """A new, empty store: a SQLite file in `tmp`, or a PostgreSQL schema dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{Path(tmp, f's{records}.sqlite3')}"
        return
    with postgres_server() as dsn:
        schema = unique_schema(f"tp_bench_inbox_{records}")
        try:
            yield with_schema(dsn, schema)
        finally:
            drop_schema(dsn, schema)


def run(quick: bool = False, store: str = "sqlite") -> list[dict[str, Any]]:
    n = 8 if quick else 40
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        measured = {}
        for records in (1_000, 100_000):
            with _store_url(store, records, tmp) as url:
                measured[records] = _measured(url, records, n)
        for name, big in measured[100_000].items():
            small = measured[1_000][name]
            rows.append({"benchmark": "inbox", "case": f"{name} at 100,000 records ({store})", "value": _p95(big),
                         "unit": "ms p95", "baseline": f"1,000 records: {_p95(small):.1f} ms",
                         "ratio": _p95(big) / _p95(small),
                         "note": f"p50 {statistics.median(big):.1f} ms, {n} requests"})
    return rows


def _measured(url: str, records: int, n: int) -> dict[str, list[float]]:
    filled = fill(url, records)
    key = f"tp1_{2:064x}"  # record 2 is a write (place_order): its operation's trail
    proc, base = serve(filled.url)
    try:
        return _times(base, _pages(filled.call_ids[3], key), n)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    from benchmarks._harness import print_rows

    kind = "postgres" if "--postgres" in sys.argv else "sqlite"
    print_rows(f"Operator's console at 100,000 audit records ({kind})", run(quick="--quick" in sys.argv, store=kind))
