"""8 worker processes against one real loopback upstream that fails for a while: per-process breakers
versus breakers shared through Redis and PostgreSQL. The upstream's own log is the measure.

Each worker runs TASKS concurrent async calls of a journaled write (one journal per fleet, shared by its
processes; workers pair up on the same calls, so exactly-once is tested across processes too).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.e2e.fleet_worker import BREAKER

HERE = Path(__file__).parent
WORKERS, TASKS = 8, 4
# TAIL_S leaves every worker room to show its recovery on a loaded machine; the time bound below still holds it.
WARMUP_S, OUTAGE_S, TAIL_S = 0.7, 2.5, 3.5
OPENING_S = 0.5  # by then every breaker has opened; after it only half-open trials reach the upstream
WINDOWS = math.ceil(OUTAGE_S / BREAKER.recovery_s)


def start_upstream(tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    port_file = tmp / "port"
    proc = subprocess.Popen([sys.executable, str(HERE / "fleet_upstream.py"), str(port_file)])
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text():
        assert time.monotonic() < deadline and proc.poll() is None, "the upstream did not start"
        time.sleep(0.02)
    return proc, int(port_file.read_text())


def get(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}") as answer:
        return json.loads(answer.read())


class Fleet:
    """One upstream and its workers, started and set up; `go` starts them all on one timeline."""

    def __init__(self, tmp: Path, workers: int, tasks: int, shared: str, store: str) -> None:
        self.upstream, self.port = start_upstream(tmp)
        self.procs = [subprocess.Popen(
            [sys.executable, str(HERE / "fleet_worker.py"), str(self.port), str(w), shared, store,
             str(WARMUP_S + OUTAGE_S + TAIL_S), str(tasks)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=HERE.parent.parent)
            for w in range(workers)]
        self.outage_at = 0.0

    def wait_ready(self) -> None:
        for p in self.procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"

    def go(self, start_at: float) -> None:
        self.outage_at = start_at + WARMUP_S
        get(self.port, f"/outage?at={self.outage_at}&seconds={OUTAGE_S}")
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.write(f"{start_at}\n")
            p.stdin.flush()

    def result(self) -> dict[str, Any]:
        reports = [json.loads(p.communicate(timeout=60)[0]) for p in self.procs]
        assert all(p.returncode == 0 for p in self.procs)
        return summarize(get(self.port, "/log"), self.outage_at, reports)

    def kill(self) -> None:
        for p in [*self.procs, self.upstream]:
            p.kill()
            p.wait()


def run_fleets(tmp: Path, setups: dict[str, tuple[int, int, str, str]]) -> dict[str, dict[str, Any]]:
    """Run the fleets side by side (each its own upstream), on one timeline: one wait for imports, not four."""
    fleets: dict[str, Fleet] = {}
    try:
        for name, (workers, tasks, shared, store) in setups.items():
            (tmp / name).mkdir()
            fleets[name] = Fleet(tmp / name, workers, tasks, shared, store)
        for fleet in fleets.values():
            fleet.wait_ready()
        start_at = time.time() + 0.3
        for fleet in fleets.values():
            fleet.go(start_at)
        return {name: fleet.result() for name, fleet in fleets.items()}
    finally:
        for fleet in fleets.values():
            fleet.kill()


def summarize(log: list[list[Any]], outage_at: float, reports: list[dict[str, Any]]) -> dict[str, Any]:
    end = outage_at + OUTAGE_S
    during = [e for e in log if outage_at <= e[0] < end]
    applied = Counter(e[2] for e in log if e[3] == 200)
    # The tool is an idempotent write: its owner enforces the key, so a runner may resend after a timeout (the
    # reply came late on a loaded machine) and that is not a duplicate. A duplicate is one key applied by two
    # workers: the journal let both of a pair through.
    appliers: dict[str, set[str]] = {}
    for _, worker, key, status in log:
        if status == 200:
            appliers.setdefault(key, set()).add(worker)
    first_ok: dict[str, float] = {}
    for t, worker, _, status in sorted(log):
        if status == 200 and t >= end:
            first_ok.setdefault(worker, t - end)
    return {
        "outage_requests": len(during),
        "opening_requests": sum(1 for e in during if e[0] < outage_at + OPENING_S),
        "trials_per_window": round(sum(1 for e in during if e[0] >= outage_at + OPENING_S)
                                   / ((OUTAGE_S - OPENING_S) / BREAKER.recovery_s), 2),
        "first_success_after_s": round(min(first_ok.values()), 3) if first_ok else None,
        "all_workers_recovered_after_s": round(max(first_ok.values()), 3) if first_ok else None,
        "workers_recovered": len(first_ok),
        "duplicates": sum(len(w) - 1 for w in appliers.values()),
        "resent_after_timeout": sum(n - 1 for n in applied.values() if n > 1),
        "applied": len(applied),
        "requests": len(log),
        "requests_by_worker": dict(Counter(e[1] for e in log)),
        "outcomes": sum((Counter(r["outcomes"]) for r in reports), Counter()),
        "fallbacks": sum(r["degraded"] for r in reports),
        "max_lag_s": max(r["max_lag_s"] for r in reports),
    }


@pytest.fixture(scope="module")
def fleet_runs(pg_dsn: str) -> Iterator[dict[str, dict[str, Any]]]:
    """One process alone, 8 with per-process state, 8 sharing through Redis, 8 through PostgreSQL.

    Each fleet journals in its own SQLite file, shared by its processes (PostgreSQL's connection limit is
    for the shared state here: 4 fleets of journal pools would exhaust it on a CI machine).
    """
    prefix = f"fleet-e2e-{uuid.uuid4().hex[:10]}"
    schema = f"fleet_e2e_{uuid.uuid4().hex[:10]}"
    with tempfile.TemporaryDirectory() as tmp:

        def journal_store() -> str:
            return f"sqlite:///{tmp}/journal-{uuid.uuid4().hex[:8]}.sqlite3"

        runs = run_fleets(Path(tmp), {
            # One process carrying the whole fleet's load: the figure a shared breaker should come down to.
            "single": (1, WORKERS * TASKS, "memory", journal_store()),
            "per_process": (WORKERS, TASKS, "memory", journal_store()),
            "redis": (WORKERS, TASKS, f"redis://127.0.0.1:6379/0?prefix={prefix}", journal_store()),
            "postgresql": (WORKERS, TASKS, f"{pg_dsn}?schema={schema}", journal_store()),
        })
    print("\nfleet runs:", json.dumps(runs, indent=1))
    yield runs
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["redis", "postgresql"])
def test_a_shared_breaker_cuts_the_outage_load_to_one_process_worth(
    fleet_runs: dict[str, dict[str, Any]], mode: str,
) -> None:
    single, alone, shared = fleet_runs["single"], fleet_runs["per_process"], fleet_runs[mode]
    # The bound: one process's figure plus one trial per window. Slack of one call per worker: the
    # call a worker had already admitted when the fleet's breaker opened reaches the upstream after it (a
    # single process sends its in-flight calls from one event loop, sooner); seen 14-18 against 13-34 here.
    assert shared["outage_requests"] <= single["outage_requests"] + WINDOWS + WORKERS
    assert alone["outage_requests"] > 2 * shared["outage_requests"]
    # After the opening burst only trials pass: one per window for the fleet, one per process without sharing.
    # Measured at the upstream, so calls admitted just before the opening but sent late (a worker's event
    # loop starved on a loaded machine) count here too: the bound is against per-process, not exactly 1.
    assert shared["trials_per_window"] < alone["trials_per_window"] / 2
    assert shared["fallbacks"] == 0


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["single", "per_process", "redis", "postgresql"])
def test_every_worker_recovers_and_nothing_is_applied_twice(
    fleet_runs: dict[str, dict[str, Any]], mode: str,
) -> None:
    run = fleet_runs[mode]
    assert run["duplicates"] == 0
    assert run["workers_recovered"] == (1 if mode == "single" else WORKERS)
    # The bound is on the breaker's clock: a worker whose event loop the machine woke late (32 processes on two
    # cores) waits that long too, so the worst wake-up lag any worker saw is added; on an idle machine it is ms.
    bound = BREAKER.recovery_s + 2 * BREAKER.half_open_retry_after_s + 0.5 + run["max_lag_s"]
    assert run["all_workers_recovered_after_s"] <= bound
