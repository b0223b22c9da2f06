"""Journaled writes per second against a raw `INSERT ... ON CONFLICT DO NOTHING` on the same store, same
settings, same run; plus duplicate counts (must be 0) and a soak of 50 concurrent retries per trial.

    python benchmarks/bench_journal.py            # full
    python benchmarks/bench_journal.py --quick    # a few seconds
    python benchmarks/bench_journal.py --soak     # 1,000 trials x 50 concurrent retries (memory, SQLite, PostgreSQL)

Rows:
- `claim + settle statements alone (store)`: the journal's two statements called on the store with intents made
  beforehand: the SQL floor of the row below (which adds the journal's own code).
- `journal (claim + settle)`: what the journal adds to one write (the claim before dispatch, committed with
  the store's full durability, and the settlement after it) vs one raw insert of a row of the same size.
- `guarded write (runner)`: `Runner.call_sync` of a write whose handler does the raw insert, journal on,
  vs the raw insert alone: the whole price of an exactly-once write through toolproof.
- `journal (claim + settle) vs hand-written claim + settle`: the same two statements (the claim's
  `INSERT ... ON CONFLICT DO NOTHING` with full durability, the settlement's `UPDATE` with the store's
  `finish_synchronous_commit`) written by hand in plain psycopg on two dedicated connections: the design's
  own limit, so the ratio is what toolproof's code costs on top of its two statements.
- SQLite in one process (synchronous FULL, the default, and NORMAL); PostgreSQL with 8 processes.
- `duplicates`: effects beyond one per key when every process (or 50 tasks) sends the same keys through
  the runner into a table with NO unique key: only the journal stands between a retry and a double effect.
PostgreSQL: `TOOLPROOF_BENCH_POSTGRES_DSN`, else `TOOLPROOF_TEST_POSTGRES_DSN`, else the local server.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import toolproof
from benchmarks._harness import targeted
from toolproof.contract._context import CallContext
from toolproof.journal._journal import Journal
from toolproof.journal._keys import key_parts_for
from toolproof.stores import PostgresStore, SqliteStore, Store, open_store
from toolproof.stores._intent import Intent

PAYLOAD = "x" * 200
EFFECTS_DDL = ("CREATE TABLE IF NOT EXISTS bench_effects (key TEXT PRIMARY KEY, payload TEXT NOT NULL)",
               "CREATE TABLE IF NOT EXISTS bench_nounique (key TEXT NOT NULL, payload TEXT NOT NULL)")
PG_PROCESSES = 8


def _sql(store: Store, sql: str, params: tuple[Any, ...] = ()) -> tuple[int, list[Any]]:
    """Raw SQL on the store's own connection (same settings as the journal); benchmarks only."""
    return store._run(sql, params)  # type: ignore[attr-defined,no-any-return]


def _prepare(store: Store) -> None:
    for ddl in EFFECTS_DDL:
        _sql(store, ddl)


def _tools(store: Store, sink: list[str] | None = None) -> toolproof.Toolset:
    """`sink` collects the effects of the soak's slow write when the store has no SQL (memory)."""

    @toolproof.tool(effect="write")
    def record_effect(n: int, ctx: CallContext) -> dict[str, int]:
        """Insert one row, keyed by the idempotency key.

        Args:
            n: A sequence number.
        """
        _sql(store, "INSERT INTO bench_effects (key, payload) VALUES (?, ?) ON CONFLICT DO NOTHING",
             (ctx.idempotency_key, PAYLOAD))
        return {"n": n}

    @toolproof.tool(effect="write", idempotent=False)
    def record_unguarded(n: int, ctx: CallContext) -> dict[str, int]:
        """Insert one row into a table with no unique key (a second run is a duplicate).

        Args:
            n: A sequence number.
        """
        _sql(store, "INSERT INTO bench_nounique (key, payload) VALUES (?, ?)", (f"{ctx.conversation_id}", PAYLOAD))
        return {"n": n}

    @toolproof.tool(effect="write", idempotent=False)
    async def record_slowly(n: int, ctx: CallContext) -> dict[str, int]:
        """Wait a moment (so that retries overlap in flight), then insert one row with no unique key.

        Args:
            n: A sequence number.
        """
        await asyncio.sleep(0.002)
        if sink is not None:
            sink.append(ctx.conversation_id or "")
        else:
            _sql(store, "INSERT INTO bench_nounique (key, payload) VALUES (?, ?)", (f"{ctx.conversation_id}", PAYLOAD))
        return {"n": n}

    return toolproof.Toolset([record_effect, record_unguarded, record_slowly])


def _raw(store: Store, n: int, tag: str) -> float:
    start = time.perf_counter()
    for i in range(n):
        _sql(store, "INSERT INTO bench_effects (key, payload) VALUES (?, ?) ON CONFLICT DO NOTHING",
             (f"raw-{tag}-{i}", PAYLOAD))
    return time.perf_counter() - start


def _journal_only(store: Store, n: int, tag: str) -> float:
    runner = toolproof.Runner(_tools(store), store=store)
    tool = runner.toolset.get("record_effect")
    journal = Journal(store)
    envelope = toolproof.Envelope.success({"n": 0}, toolproof.Meta("record_effect", "c", None, 1))
    start = time.perf_counter()
    for i in range(n):
        ctx = CallContext(conversation_id=f"j-{tag}-{i}")
        args = {"n": i}
        intent = journal.new_intent(tool, args, ctx, key_parts_for(tool, args, ctx))
        claim = journal.claim(intent)
        assert claim.kind == "proceed", claim
        journal.record(intent, tool, envelope)
    return time.perf_counter() - start


def _statements_only(store: Store, n: int, tag: str) -> float:
    """The journal's two statements on the store itself (claim, then settle as done), intents made beforehand:
    the SQL floor under `_journal_only`, which adds the journal's own code (key, intent, outcome)."""
    now = time.time()
    intents = [Intent(key=f"s-{tag}-{i}", operation_id=f"s-{tag}-{i}", tool="record_effect", fingerprint="f" * 64,
                      arguments={"n": i}, status="in_flight", created_at=now, updated_at=now, owner="bench",
                      lease_until=now + 300.0, call_id=f"call-{i}", conversation_id=f"s-{tag}-{i}")
               for i in range(n)]
    outcome = {"ok": True, "result": {"n": 0}, "meta": {"tool": "record_effect", "attempts": 1}}
    start = time.perf_counter()
    for intent in intents:
        assert store.journal_claim(intent)
        assert store.journal_finish(intent.key, intent.owner, "done", outcome, time.time())
    return time.perf_counter() - start


def _guarded(store: Store, n: int, tag: str) -> float:
    runner = toolproof.Runner(_tools(store), store=store)
    start = time.perf_counter()
    for i in range(n):
        env = runner.call_sync("record_effect", {"n": i}, context=CallContext(conversation_id=f"g-{tag}-{i}"))
        assert env.ok, env
    seconds = time.perf_counter() - start
    runner.flush()  # the audit rows written in the background belong to the store before it closes
    return seconds


def _row(bench: str, case: str, n: int, seconds: float, base_seconds: float) -> dict[str, Any]:
    rate, base = n / seconds, n / base_seconds
    return {"benchmark": bench, "case": case, "value": round(rate, 1), "unit": "writes/s",
            "baseline": round(base, 1), "ratio": round(rate / base, 3)}


def _what_remains(n: int, raw: float, statements: float, journal: float, guarded: float) -> str:
    """Where a guarded write's time goes (µs a write, wall clock): the journal's two statements, the journal's
    own code around them, the tool's own insert (the raw one) and the rest (runner and audit trail)."""
    us = [seconds / n * 1e6 for seconds in (statements, journal - statements, raw, guarded - journal - raw)]
    return ("per write: claim + settle SQL {:.0f} µs, journal code {:.0f} µs, the tool's insert {:.0f} µs, "
            "runner + audit {:.0f} µs".format(*us))


# --- SQLite, one process ----------------------------------------------------------------------------------------


def sqlite_rows(quick: bool) -> list[dict[str, Any]]:
    """Many short alternating rounds, so that the VM's fsync jitter hits baseline and candidate alike."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="toolproof-bench-") as tmp:
        for sync, n, rounds in (("FULL", 60 if quick else 400, 6 if quick else 20),
                                ("NORMAL", 600 if quick else 6000, 6 if quick else 20)):
            store = SqliteStore(Path(tmp) / f"bench-{sync}.sqlite3", synchronous=sync)
            _prepare(store)
            _raw(store, 20, "warm")
            raw = statements = journal = guarded = 0.0
            step = n // rounds
            for rep in range(rounds):
                raw += _raw(store, step, f"{sync}{rep}")
                statements += _statements_only(store, step, f"{sync}{rep}")
                journal += _journal_only(store, step, f"{sync}{rep}")
                guarded += _guarded(store, step, f"{sync}{rep}")
            label = f"SQLite 1 process, synchronous={sync}"
            done = step * rounds
            rows.append(_row("journal", f"claim + settle statements alone (store) vs raw insert; {label}", done,
                             statements, raw))
            rows.append(_row("journal", f"journal (claim + settle) vs raw insert; {label}", done, journal, raw))
            rows.append(_row("journal", f"guarded write (runner) vs raw insert; {label}", done, guarded, raw))
            share = {**_row("journal", f"guarded write (runner) vs journal alone; {label}", done, guarded, journal),
                     "note": "quick run: too short to split" if quick else
                     _what_remains(done, raw, statements, journal, guarded)}
            rows.append(targeted(share, "sqlite-share", share["ratio"]) if sync == "NORMAL" else share)
            store.close()
    return rows


# --- PostgreSQL, 8 processes ---------------------------------------------------------------------------------------


def pg_dsn() -> str | None:
    import psycopg

    for dsn in (os.environ.get("TOOLPROOF_BENCH_POSTGRES_DSN"), os.environ.get("TOOLPROOF_TEST_POSTGRES_DSN"),
                "postgresql://postgres@127.0.0.1:5432/test"):
        if not dsn:
            continue
        try:
            with psycopg.connect(dsn, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            return dsn
        except psycopg.Error:
            continue
    return None


def _handwritten(url: str, n: int, tag: str) -> float:
    """The journal's two statements by hand: one claim connection (server durability), one settle connection
    (`synchronous_commit` as the store settles), both autocommit, prepared after psycopg's default threshold."""
    import json

    import psycopg

    from toolproof.stores._postgres import split_options
    from toolproof.stores._sql import SQL_CLAIM, SQL_FINISH

    dsn, schema, finish = split_options(url)
    path = f"-c search_path={schema}" if schema else ""
    claim_sql, finish_sql = SQL_CLAIM.replace("?", "%s"), SQL_FINISH.replace("?", "%s")
    outcome = json.dumps({"ok": True, "result": {"n": 0}, "attempts": 1}, separators=(",", ":"))
    with psycopg.connect(dsn, autocommit=True, options=path) as claim, psycopg.connect(
            dsn, autocommit=True, options=f"{path} -c synchronous_commit={finish or 'off'}") as settle:
        start = time.perf_counter()
        for i in range(n):
            key, now = f"h-{tag}-{i}", time.time()
            count = claim.execute(claim_sql, (key, key, "record_effect", "f" * 64, json.dumps({"n": i}), "in_flight",
                                              now, now, "owner", now + 300.0, f"call-{i}", key, None, None,
                                              None)).rowcount
            assert count == 1
            assert settle.execute(finish_sql, ("done", outcome, time.time(), key, "owner")).rowcount == 1
        return time.perf_counter() - start


def _pg_worker(url: str, phase: str, n: int, worker: int, barrier: Any, out: Any) -> None:
    store = open_store(url)
    try:
        barrier.wait()
        tag = f"{phase}-w{worker}-{uuid.uuid4().hex[:6]}"
        if phase == "handwritten":
            seconds = _handwritten(url, n, tag)
        elif phase == "raw":
            seconds = _raw(store, n, tag)
        elif phase == "journal":
            seconds = _journal_only(store, n, tag)
        elif phase == "guarded":
            seconds = _guarded(store, n, tag)
        else:  # race: every worker sends the same keys
            runner = toolproof.Runner(_tools(store), store=store)
            runner.journal = Journal(store, wait_s=30.0, poll_s=0.002)
            start = time.perf_counter()
            for i in range(n):
                runner.call_sync("record_unguarded", {"n": i}, context=CallContext(conversation_id=f"race-{i}"))
            seconds = time.perf_counter() - start
            runner.flush()
        out.put(seconds)
    finally:
        store.close()


def _pg_phase(ctx: Any, url: str, phase: str, n: int) -> float:
    barrier = ctx.Barrier(PG_PROCESSES + 1)
    out = ctx.Queue()
    procs = [ctx.Process(target=_pg_worker, args=(url, phase, n, w, barrier, out)) for w in range(PG_PROCESSES)]
    for p in procs:
        p.start()
    barrier.wait()
    for p in procs:
        p.join(timeout=600)
        if p.exitcode != 0:
            raise RuntimeError(f"benchmark worker failed in phase {phase}")
    # All workers start at the barrier; the phase lasts as long as its slowest worker's own loop.
    return max(out.get(timeout=10) for _ in procs)


def postgres_rows(quick: bool) -> list[dict[str, Any]]:
    dsn = pg_dsn()
    if dsn is None:
        return [{"benchmark": "journal", "case": "PostgreSQL: no server reachable", "value": None, "unit": "",
                 "baseline": None, "ratio": None}]
    schema = f"tp_bench_{uuid.uuid4().hex[:10]}"
    url = f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"
    store = PostgresStore(url)
    _prepare(store)
    ctx = mp.get_context("spawn")
    n = 100 if quick else 400
    rounds = 1 if quick else 3
    total = n * PG_PROCESSES * rounds
    try:
        raw = hand = journal = guarded = 0.0
        for _ in range(rounds):
            raw += _pg_phase(ctx, url, "raw", n)
            hand += _pg_phase(ctx, url, "handwritten", n)
            journal += _pg_phase(ctx, url, "journal", n)
            guarded += _pg_phase(ctx, url, "guarded", n)
        race_keys = 50 if quick else 300
        _pg_phase(ctx, url, "race", race_keys)
        _, rows = _sql(store, "SELECT COUNT(*) - COUNT(DISTINCT key) FROM bench_nounique")
        duplicates = int(rows[0][0])
        label = f"PostgreSQL {PG_PROCESSES} processes"
        return [
            _row("journal", f"journal (claim + settle) vs raw insert; {label}", total, journal, raw),
            _row("journal", f"hand-written claim + settle (psycopg) vs raw insert; {label}", total, hand, raw),
            _row("journal", f"journal (claim + settle) vs hand-written claim + settle; {label}", total, journal,
                 hand),
            _row("journal", f"guarded write (runner) vs raw insert; {label}", total, guarded, raw),
            {"benchmark": "journal", "case": f"duplicates; {label} racing on {race_keys} shared keys",
             "value": duplicates, "unit": "duplicates", "baseline": 0, "ratio": None},
        ]
    finally:
        store.drop_schema()
        store.close()


# --- soak: trials of 50 concurrent identical calls --------------------------------------------------------------


async def _soak_trials(store: Store, trials: int, fanout: int, sink: list[str] | None) -> int:
    runner = toolproof.Runner(_tools(store, sink), store=store)
    runner.journal = Journal(store, poll_s=0.002)
    tag = uuid.uuid4().hex[:8]
    for t in range(trials):
        ctx = CallContext(conversation_id=f"soak-{tag}-{t}")
        envs = await asyncio.gather(*[runner.call("record_slowly", {"n": t}, context=ctx) for _ in range(fanout)])
        if not all(e.ok for e in envs):
            raise RuntimeError(f"soak trial {t}: {[e.to_dict() for e in envs if not e.ok][:1]}")
    effects = int(_sql(store, "SELECT COUNT(*) FROM bench_nounique")[1][0][0]) if sink is None else len(sink)
    runner.flush()
    if isinstance(store, PostgresStore):
        store.drop_schema()
    await store.aclose()
    return effects


def soak_rows(trials: int, fanout: int = 50) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="toolproof-soak-") as tmp:
        targets: list[tuple[str, str]] = [("memory", "memory://"), ("SQLite", f"sqlite:///{tmp}/soak.sqlite3")]
        dsn = pg_dsn()
        schema = f"tp_soak_{uuid.uuid4().hex[:10]}"
        if dsn is not None:
            targets.append(("PostgreSQL", f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"))
        for name, url in targets:
            store = open_store(url)
            sql = isinstance(store, SqliteStore | PostgresStore)
            sink: list[str] | None = None if sql else []
            if sql:
                _prepare(store)
            start = time.perf_counter()
            effects = asyncio.run(_soak_trials(store, trials, fanout, sink))
            seconds = time.perf_counter() - start
            rows.append({"benchmark": "journal-soak", "case": f"{name}: {trials} trials x {fanout} concurrent retries",
                         "value": effects - trials, "unit": "duplicates", "baseline": 0, "ratio": None,
                         "seconds": round(seconds, 2)})
    return rows


def run(quick: bool) -> list[dict[str, Any]]:
    rows = sqlite_rows(quick) + postgres_rows(quick)
    rows += soak_rows(20 if quick else 100)
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("benchmark", "case", "value", "unit", "baseline", "ratio", title="write journal")
    for r in rows:
        table.add_row(r["benchmark"], r["case"], str(r["value"]), r["unit"], str(r["baseline"]), str(r["ratio"]))
    Console(width=200).print(table)


if __name__ == "__main__":
    if "--soak" in sys.argv:
        _print(soak_rows(1000))
    else:
        _print(run("--quick" in sys.argv))
