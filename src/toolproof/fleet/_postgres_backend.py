"""The shared state in PostgreSQL (beside the journal): one row per breaker and per bucket.

A breaker still closed is read with one plain SELECT; every change is one short transaction that locks
the row (`SELECT ... FOR UPDATE`), decides, and writes, so no two workers decide on the same old state.
Time is the server's `clock_timestamp()`, so workers with skewed clocks agree on recovery windows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import sql

from ..orchestration.breaker import Admission, BreakerConfig, BreakerState

T = TypeVar("T")
Changes = dict[str, Any]

_BREAKERS = "toolproof_fleet_breakers"
_BUCKETS = "toolproof_fleet_buckets"
_RATES = "toolproof_fleet_rates"
_DDL = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.toolproof_fleet_breakers (
  name text PRIMARY KEY, state text NOT NULL DEFAULT 'closed', consecutive integer NOT NULL DEFAULT 0,
  opened_at double precision NOT NULL DEFAULT 0, trial_at double precision, trial text,
  opened integer NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS {schema}.toolproof_fleet_buckets (
  name text PRIMARY KEY, tokens bigint NOT NULL, ok boolean NOT NULL DEFAULT true);
CREATE TABLE IF NOT EXISTS {schema}.toolproof_fleet_rates (
  name text PRIMARY KEY, tokens double precision NOT NULL, at double precision NOT NULL,
  ok boolean NOT NULL DEFAULT true);
"""


def admit_rule(state: str, opened_at: float, trial_at: float | None, now: float, config: BreakerConfig,
               token: str) -> tuple[Admission, Changes]:
    """Open: refuse until the window ends; then half-open: one trial per window, tagged `token`."""
    if state == "open":
        left = opened_at + config.recovery_s - now
        if left > 0:
            return Admission(False, retry_after_s=min(left, config.recovery_s)), {}
        state, trial_at = "half_open", None
    if trial_at is not None and now - trial_at < config.recovery_s:
        return Admission(False, retry_after_s=config.half_open_retry_after_s), {"state": state}
    return Admission(True, trial=True), {"state": state, "trial_at": now, "trial": token}


def record_rule(state: str, consecutive: int, trial: str | None, now: float, config: BreakerConfig,
                failure: bool, token: str | None) -> Changes:
    """Half-open: only the current trial's outcome counts. Closed: count consecutive failures, open at the threshold."""
    opened = {"state": "open", "opened_at": now, "consecutive": 0, "trial": None, "trial_at": None}
    if state == "half_open":
        if token is None or token != trial:
            return {}
        return opened if failure else {"state": "closed", "consecutive": 0, "trial": None, "trial_at": None}
    if state == "open":
        return {}
    if not failure:
        return {"consecutive": 0} if consecutive else {}
    if consecutive + 1 >= config.failure_threshold:
        return opened
    return {"consecutive": consecutive + 1}


class PostgresBackend:
    """Tables `toolproof_fleet_breakers` and `toolproof_fleet_buckets` in `schema` (psycopg 3, sync)."""

    errors: tuple[type[BaseException], ...] = (psycopg.OperationalError, psycopg.InterfaceError)

    def __init__(self, dsn: str, *, schema: str = "public", timeout_s: float = 0.25) -> None:
        self.label = dsn.split("@")[-1]
        self.dsn = dsn
        self.timeout_s = timeout_s
        self._schema = sql.Identifier(schema)
        self.application_name = f"toolproof-fleet:{schema}"[:63]  # what an operator sees in pg_stat_activity
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None  # connected on first use: a server away is no error

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """The one connection, (re)opened on demand; dropped on a connection error so the next try reconnects."""
        with self._lock:
            if self._conn is None or self._conn.closed:
                ms = max(int(self.timeout_s * 1000), 1)
                conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=max(2, round(self.timeout_s)),
                                       options=f"-c statement_timeout={ms} -c lock_timeout={ms}",
                                       application_name=self.application_name)
                with conn.transaction():
                    conn.execute("SET LOCAL statement_timeout = '5s'; SET LOCAL lock_timeout = '5s'")  # once
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext('toolproof_fleet_ddl'))")  # first starts race
                    conn.execute(sql.SQL(_DDL).format(schema=self._schema))
                self._conn = conn
            try:
                yield self._conn
            except self.errors:
                self._conn.close()
                self._conn = None
                raise

    def _table(self, name: str) -> sql.Composed:
        return sql.SQL("{}.{}").format(self._schema, sql.Identifier(name))

    def _locked(self, name: str, decide: Callable[[tuple[Any, ...]], tuple[T, Changes]]) -> T:
        """Lock the breaker's row (created if missing), decide on it with the server's time, write the changes."""
        table = self._table(_BREAKERS)
        with self._connection() as conn, conn.transaction():
            conn.execute(sql.SQL("INSERT INTO {} (name) VALUES (%s) ON CONFLICT DO NOTHING").format(table), (name,))
            row = conn.execute(sql.SQL(
                "SELECT state, consecutive, opened_at, trial_at, trial, extract(epoch FROM clock_timestamp())::float8 "
                "FROM {} WHERE name = %s FOR UPDATE").format(table), (name,)).fetchone()
            assert row is not None
            result, changes = decide(row)
            if changes:
                sets = sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in changes)
                bump = sql.SQL(", opened = opened + 1") if changes.get("state") == "open" else sql.SQL("")
                conn.execute(sql.SQL("UPDATE {} SET {}{} WHERE name = %s").format(table, sets, bump),
                             (*changes.values(), name))
            return result

    def admit(self, name: str, config: BreakerConfig, token: str) -> tuple[Admission, int]:
        with self._connection() as conn:
            row = conn.execute(sql.SQL("SELECT state, consecutive FROM {} WHERE name = %s").format(
                self._table(_BREAKERS)), (name,)).fetchone()
        if row is None or row[0] == "closed":
            return Admission(True), row[1] if row else 0

        def decide(r: tuple[Any, ...]) -> tuple[tuple[Admission, int], Changes]:
            if r[0] == "closed":
                return (Admission(True), r[1]), {}
            admission, changes = admit_rule(r[0], r[2], r[3], r[5], config, token)
            return (admission, 0), changes

        return self._locked(name, decide)

    def record(self, name: str, config: BreakerConfig, failure: bool, token: str | None) -> int:
        def decide(r: tuple[Any, ...]) -> tuple[int, Changes]:
            changes = record_rule(r[0], r[1], r[4], r[5], config, failure, token)
            closed = changes.get("state", r[0]) == "closed"
            return (int(changes.get("consecutive", r[1])) if closed else 0), changes

        return self._locked(name, decide)

    def state(self, name: str, config: BreakerConfig) -> BreakerState:
        with self._connection() as conn:
            row = conn.execute(sql.SQL(
                "SELECT state, opened_at, extract(epoch FROM clock_timestamp())::float8 FROM {} WHERE name = %s"
            ).format(self._table(_BREAKERS)), (name,)).fetchone()
        if row is None:
            return BreakerState.CLOSED
        if row[0] == "open" and row[2] >= row[1] + config.recovery_s:
            return BreakerState.HALF_OPEN
        return BreakerState(row[0])

    def take(self, name: str, capacity: int, cost: int, refund: int) -> int | None:
        """One statement: pay the refund (capped), then take the cost only if the tokens cover it."""
        with self._connection() as conn:
            row = conn.execute(sql.SQL(
                "INSERT INTO {t} AS b (name, tokens, ok) VALUES (%(n)s, CASE WHEN %(cap)s >= %(cost)s "
                "THEN %(cap)s - %(cost)s ELSE %(cap)s END, %(cap)s >= %(cost)s) "
                "ON CONFLICT (name) DO UPDATE SET "
                "tokens = LEAST(%(cap)s, b.tokens + %(refund)s) - CASE WHEN LEAST(%(cap)s, b.tokens + %(refund)s) "
                ">= %(cost)s THEN %(cost)s ELSE 0 END, ok = LEAST(%(cap)s, b.tokens + %(refund)s) >= %(cost)s "
                "RETURNING tokens, ok"
            ).format(t=self._table(_BUCKETS)), {"n": name, "cap": capacity, "cost": cost, "refund": refund}).fetchone()
        assert row is not None
        return int(row[0]) if row[1] else None

    def rate_take(self, name: str, tokens_per_s: float, burst: int) -> float | None:
        """One statement: refill by the server's clock, take a token if there is one; the wait if not."""
        with self._connection() as conn:
            row = conn.execute(sql.SQL(
                "WITH now AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS t) "
                "INSERT INTO {r} AS b (name, tokens, at, ok) SELECT %(n)s, %(burst)s - 1, now.t, true FROM now "
                "ON CONFLICT (name) DO UPDATE SET "
                "ok = LEAST(%(burst)s, b.tokens + GREATEST(0, EXCLUDED.at - b.at) * %(rate)s) >= 1, "
                "tokens = LEAST(%(burst)s, b.tokens + GREATEST(0, EXCLUDED.at - b.at) * %(rate)s) - CASE WHEN "
                "LEAST(%(burst)s, b.tokens + GREATEST(0, EXCLUDED.at - b.at) * %(rate)s) >= 1 THEN 1 ELSE 0 END, "
                "at = EXCLUDED.at RETURNING tokens, ok"
            ).format(r=self._table(_RATES)), {"n": name, "burst": float(burst), "rate": float(tokens_per_s)}).fetchone()
        assert row is not None
        return None if row[1] else (1.0 - float(row[0])) / tokens_per_s

    def reset(self, name: str) -> None:
        with self._connection() as conn:
            conn.execute(sql.SQL("DELETE FROM {} WHERE name = %s").format(self._table(_BREAKERS)), (name,))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
