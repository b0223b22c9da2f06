"""PostgreSQL: many workers on many machines. psycopg 3 with a connection pool; async on the event loop.

`postgresql://user@host:5432/db?schema=toolproof` keeps the tables in their own schema (created if
missing). Every statement runs in autocommit: the journal's claim is a single `INSERT ... ON CONFLICT
DO NOTHING`, committed before dispatch with the server's `synchronous_commit` (on by default).

Settling an intent afterwards runs on connections with `synchronous_commit=off` (`finish_synchronous_commit`
in the URL or the constructor; `on` to make it as durable as the claim). Losing that record to a server
crash is safe: the intent stays `in_flight`, its lease runs out and it becomes `unknown`; it is never re-run.

Connections: every store of a process opened on the same URL shares one pool per role (statements, settling)
and one async pool per role and event loop (`POOLS`, reference-counted: the last store to close closes them).
Each connection is checked on checkout (locally: the server is asked only when something arrived on the idle
connection's socket), so one the server dropped is replaced rather than used; a settle that
still meets a broken connection is retried once. While the server refuses connections a statement waits at
most `timeout_s` (default 5 s; `?timeout_s=` in the URL), then fails with `StoreUnavailable` saying why (one
TCP connect of at most 0.5 s tells `connection refused` from `timeout`). An async pool closes when its event
loop shuts down, so `asyncio.run(runner.call(...))` returns without `aclose()`.
"""

from __future__ import annotations

import asyncio
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..contract._redaction import redact_text
from ._base import FinishStatus, StoreNotFound, StoreUnavailable, shown_url
from ._intent import Intent
from ._sql import (
    SQL_CLAIM,
    SQL_EXPIRE,
    SQL_FINISH,
    SQL_FOR_OPERATION,
    SQL_GET,
    SQL_RELEASE,
    ChainRun,
    SqlStore,
    _like,
    dumps,
    intent_from_row,
    intent_params,
    migrate,
    storable_params,
)

_IDENT = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_MIGRATION_LOCK = 0x746F6F6C70726F6F  # "toolproo": one migrator at a time
DEFAULT_TIMEOUT_S = 5.0  # the longest a statement waits for a connection while the server refuses them
PoolKey = tuple[str, str, int, float]  # (DSN, connection options, max size, timeout)
_IDLE = 0  # psycopg.pq.TransactionStatus.IDLE (psycopg is imported only when a PostgreSQL store is made)
_POLL = hasattr(select, "poll")  # select() cannot watch descriptors past 1023; poll() can (not on Windows)
LOAN_S = 30.0  # how long a lane keeps a connection before handing it back to its pool (which may retire it)


class _Lane:
    """A sync pool's connections kept borrowed between statements, each with its own cursor: a statement takes
    the last one given back (checked locally, as `_quiet` does) instead of `getconn`/`putconn`, whose locks,
    logging and bookkeeping cost more client CPU than the rest of a journaled write's Python (two checkouts per
    write). The pool still opens, checks and replaces connections and caps their number: a lane only holds
    what it borrowed, and hands a connection back at once when it is not idle (broken, or mid-transaction) or
    a thread waits on the pool, every one after `LOAN_S` (so the pool's `max_lifetime` still applies), and all
    of them when the pool closes. Every sync statement on the pool goes through its lane."""

    __slots__ = ("idle", "lock", "pool", "waiting")

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.idle: deque[tuple[Any, Any, float, Any]] = deque()  # what `take` returns; append/pop are atomic
        self.lock = threading.Lock()
        self.waiting = 0  # threads inside the pool's `getconn`

    def take(self) -> tuple[Any, Any, float, Any]:
        """(connection, its cursor, when its loan ends, a poller on its socket or None)."""
        kept = self._kept()
        if kept is not None:
            return kept
        with self.lock:
            self.waiting += 1
        try:
            kept = self._kept()  # given back meanwhile, before `give` could see this thread waiting
            if kept is not None:
                return kept
            conn = self.pool.getconn()
        finally:
            with self.lock:
                self.waiting -= 1
        poller = None
        if _POLL:
            poller = select.poll()
            poller.register(conn.pgconn.socket, select.POLLIN | select.POLLPRI)
        return conn, conn.cursor(), time.monotonic() + LOAN_S, poller

    def _kept(self) -> tuple[Any, Any, float, Any] | None:
        idle = self.idle
        while idle:
            try:
                conn, cur, until, poller = idle.pop()
            except IndexError:  # another thread took the last one
                return None
            # `_quiet`, with the poller made once per connection (its socket stays the same while it is open)
            try:
                quiet = (conn.pgconn.transaction_status == _IDLE and not poller.poll(0)) if poller else _quiet(conn)
            except Exception:  # a connection whose state cannot be read goes back to the pool, which asks it
                quiet = False
            if quiet and until > time.monotonic():
                return conn, cur, until, poller
            self.pool.putconn(conn)  # the pool checks it on the next checkout, replaces or retires it
        return None

    def give(self, conn: Any, cur: Any, until: float, poller: Any) -> None:
        if conn.closed or conn.pgconn.transaction_status != _IDLE:
            self.pool.putconn(conn)  # the pool rolls back or discards it
            return
        self.idle.append((conn, cur, until, poller))
        if self.waiting:  # a thread waits on the pool (read after the append: one of the two sees the other)
            try:
                conn = self.idle.pop()[0]
            except IndexError:
                return
            self.pool.putconn(conn)

    def close(self) -> None:
        """Give every kept connection back, then close the pool."""
        while self.idle:
            try:
                conn = self.idle.pop()[0]
            except IndexError:
                break
            self.pool.putconn(conn)
        self.pool.close()


@dataclass
class _Shared:
    """One sync pool (in its lane), the async pools of the loops that used it, and how many open stores hold it."""

    lane: _Lane
    holders: int = 0
    apools: dict[asyncio.AbstractEventLoop, Any] = field(default_factory=dict)
    closers: dict[asyncio.AbstractEventLoop, AsyncIterator[None]] = field(default_factory=dict)


class PoolRegistry:
    """The pools of this process, one per store URL and role, shared by every store (and so every Runner)
    opened on it: 50 Runners on one database hold one pool's connections, not 50. An entry lives while a
    store holds it; the last `release` closes its pools and forgets it, so the registry never grows."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shared: dict[PoolKey, _Shared] = {}

    def __len__(self) -> int:
        return len(self._shared)

    def acquire(self, key: PoolKey, make: Callable[[], Any]) -> _Lane:
        """The sync pool for `key` in its lane, made on first use; the caller `release`s it when it closes."""
        with self._lock:
            shared = self._shared.get(key)
            if shared is None:
                shared = self._shared[key] = _Shared(_Lane(make()))
            shared.holders += 1
            return shared.lane

    def release(self, key: PoolKey) -> None:
        """Drop one holder; the last one closes the sync pool and the async pools whose loops are idle."""
        with self._lock:
            shared = self._shared.get(key)
            if shared is None:
                return
            shared.holders -= 1
            if shared.holders > 0:
                return
            del self._shared[key]
        for loop, apool in list(shared.apools.items()):
            if loop.is_running():  # its loop closes it at shutdown (see `_close_at_shutdown`)
                continue
            shared.apools.pop(loop, None)
            shared.closers.pop(loop, None)
            if not loop.is_closed():
                loop.run_until_complete(apool.close())
        shared.lane.close()

    async def arelease(self, key: PoolKey) -> None:
        """`release` from inside a loop: this loop's async pool is closed here when it was the last holder."""
        loop = asyncio.get_running_loop()
        with self._lock:
            shared = self._shared.get(key)
            last = shared is not None and shared.holders == 1
        if last and shared is not None:
            apool = shared.apools.pop(loop, None)
            shared.closers.pop(loop, None)
            if apool is not None:
                await apool.close()
        await asyncio.to_thread(self.release, key)  # the sync pool joins its worker threads

    async def apool(self, key: PoolKey, make: Callable[[], Any]) -> Any:
        """The running loop's async pool for `key` (pools are bound to their loop), opened on first use."""
        loop = asyncio.get_running_loop()
        with self._lock:
            shared = self._shared.get(key)
            if shared is None:
                raise RuntimeError("the PostgreSQL store is closed")
            found = shared.apools.get(loop)
        if found is not None:
            return found
        apool = make()
        await apool.open()
        with self._lock:
            found = shared.apools.setdefault(loop, apool)
        if found is not apool:  # another task of this loop opened one meanwhile
            await apool.close()
            return found
        closer = _close_at_shutdown(apool, lambda: self._forget(shared, loop))
        await closer.__anext__()
        shared.closers[loop] = closer  # held here: the loop keeps only a weak reference
        return apool

    def _forget(self, shared: _Shared, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            shared.apools.pop(loop, None)
            shared.closers.pop(loop, None)


async def _close_at_shutdown(apool: Any, forget: Callable[[], None]) -> AsyncIterator[None]:
    """Suspended until the loop's `shutdown_asyncgens()` (which `asyncio.run` calls) closes it, which closes
    the pool: without it a loop ends with the pool's workers still waiting and the process hangs at exit."""
    try:
        yield
    finally:
        forget()
        await apool.close()


POOLS = PoolRegistry()


def _timeout(given: float | None, in_url: str | None) -> float:
    value = given if given is not None else float(in_url) if in_url is not None else DEFAULT_TIMEOUT_S
    if not value > 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, got {value!r}")
    return float(value)


def _pop_option(dsn: str, name: str) -> tuple[str, str | None]:
    """The DSN without the query parameter `name`, and its value (None when absent)."""
    parts = urlsplit(dsn)
    query = parse_qsl(parts.query, keep_blank_values=True)
    found = [v for k, v in query if k == name]
    rest = [(k, v) for k, v in query if k != name]
    return urlunsplit(parts._replace(query=urlencode(rest))), found[-1] if found else None


def _broken(exc: BaseException) -> bool:
    """A connection that broke under a statement (worth one more try), not a pool that timed out waiting."""
    import psycopg
    from psycopg_pool import PoolTimeout

    return isinstance(exc, psycopg.OperationalError) and not isinstance(exc, PoolTimeout)


def _pool_timeout(exc: BaseException) -> bool:
    from psycopg_pool import PoolTimeout

    return isinstance(exc, PoolTimeout)


def _why_no_connection(dsn: str) -> str:
    """After the pool waited in vain: does the server refuse connections, or not answer? One TCP connect of at
    most 0.5 s to the DSN's host (a server that accepts it is busy or failing: still a timeout here)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(dsn)
        host, port = str(info.get("hostaddr") or info.get("host") or ""), int(info.get("port") or 5432)
    except Exception:
        return "timeout"
    if not host or host.startswith("/") or "," in host:  # a Unix socket or several hosts: not probed
        return "timeout"
    try:
        socket.create_connection((host, port), timeout=0.5).close()
    except ConnectionRefusedError:
        return "connection refused"
    except OSError:
        return "timeout"
    return "timeout"


def _quiet(conn: Any) -> bool:
    """Whether a pooled connection is usable without asking the server: open, idle, and nothing arrived on its
    socket since its last statement. A server that drops a connection (restart, `pg_terminate_backend`,
    `idle_session_timeout`, a proxy going away) sends a notice and closes the socket, which makes it readable;
    only then is the server asked (`_check`). Asking on every checkout cost a round trip per statement: a
    claim + settle took 4 instead of 2, ~1,000 instead of ~770 us of client + server CPU per journaled write
    (one process on a loaded 2-core VM); this local check costs ~4 us (`pgconn`, not `conn.info`, which is 5 us)."""
    try:
        pgconn = conn.pgconn
        if pgconn.transaction_status != _IDLE:  # also a closed connection (UNKNOWN)
            return False
        if _POLL:
            poller = select.poll()
            poller.register(pgconn.socket, select.POLLIN | select.POLLPRI)
            return not poller.poll(0)
        return not select.select([pgconn.socket], [], [], 0)[0]
    except Exception:  # a connection whose state cannot be read is asked, not trusted
        return False


def _check(conn: Any) -> None:
    """The pool's check on checkout: a connection that may have been dropped is asked (`SELECT`-free empty
    query), and replaced when the server does not answer."""
    if not _quiet(conn):
        from psycopg_pool import ConnectionPool

        ConnectionPool.check_connection(conn)


async def _acheck(conn: Any) -> None:
    if not _quiet(conn):
        from psycopg_pool import AsyncConnectionPool

        await AsyncConnectionPool.check_connection(conn)


@lru_cache(maxsize=512)
def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


def split_options(url: str) -> tuple[str, str | None, str | None]:
    """(the DSN without toolproof's own parameters, `schema`, `finish_synchronous_commit`)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {"schema", "finish_synchronous_commit"}
    found = {k: v for k, v in query if k in ours}
    rest = [(k, v) for k, v in query if k not in ours]
    schema = found.get("schema")
    if schema is not None and not _IDENT.fullmatch(schema):
        raise ValueError(f"schema must be a lower-case SQL identifier, got {schema!r}")
    return urlunsplit(parts._replace(query=urlencode(rest))), schema, found.get("finish_synchronous_commit")


class PostgresStore(SqlStore):
    """Audit, stops and the write journal in PostgreSQL; safe for many processes (the UNIQUE key decides)."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        max_size: int = 8,
        timeout_s: float | None = None,
        finish_synchronous_commit: str | None = None,
        create: bool = True,
    ) -> None:
        try:
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # pragma: no cover - the extra is missing
            raise ImportError("PostgresStore needs psycopg: pip install 'toolproof[postgres]'") from exc
        dsn, url_schema, url_finish = split_options(url)
        dsn, url_timeout = _pop_option(dsn, "timeout_s")
        self.schema = schema or url_schema
        if self.schema is not None and not _IDENT.fullmatch(self.schema):
            raise ValueError(f"schema must be a lower-case SQL identifier, got {self.schema!r}")
        self.dsn = dsn
        self.url = url
        self._max_size = max_size
        self._timeout_s = _timeout(timeout_s, url_timeout)
        # A connection attempt the network swallows gives up too (libpq counts whole seconds, at least 2).
        self._kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": max(2, round(self._timeout_s))}
        if self.schema is not None:
            self._kwargs["options"] = f"-c search_path={self.schema}"
        finish = (finish_synchronous_commit or url_finish or "off").lower()
        if finish not in ("on", "off", "local", "remote_write", "remote_apply"):
            raise ValueError(f"finish_synchronous_commit must be on, off, local, remote_write or remote_apply, "
                             f"got {finish!r}")
        self.finish_synchronous_commit = finish
        options = f"{self._kwargs.get('options', '')} -c synchronous_commit={finish}".strip()
        self._settle_kwargs: dict[str, Any] = {**self._kwargs, "options": options}
        if not create:
            self._require_tables()
        self._migrate()
        self._keys = (self._key(self._kwargs), self._key(self._settle_kwargs))
        self._lane = POOLS.acquire(self._keys[0], lambda: self._make_pool(ConnectionPool, self._kwargs, "toolproof"))
        self._settle_lane = POOLS.acquire(
            self._keys[1], lambda: self._make_pool(ConnectionPool, self._settle_kwargs, "toolproof-settle"))

    def _key(self, kwargs: dict[str, Any]) -> PoolKey:
        return (self.dsn, repr(sorted(kwargs.items())), self._max_size, self._timeout_s)

    def _make_pool(self, kind: Any, kwargs: dict[str, Any], name: str) -> Any:
        """A pool that checks each connection on checkout (one the server dropped is replaced, not used)."""
        synchronous = kind.__name__ == "ConnectionPool"
        # An async pool opens connections only for a waiting caller (min_size 0): a connection still being
        # opened in the background when `asyncio.run` cancels the loop's tasks would hang its shutdown.
        check = _check if synchronous else _acheck
        return kind(self.dsn, kwargs=kwargs, min_size=1 if synchronous else 0, max_size=self._max_size,
                    timeout=self._timeout_s, open=synchronous, name=name, check=check)

    def _require_tables(self) -> None:
        """Raise `StoreNotFound` unless the database exists and holds toolproof's tables (in the schema)."""
        import psycopg

        where = shown_url(self.dsn) + (f" (schema {self.schema})" if self.schema else "")
        try:
            with psycopg.connect(self.dsn, autocommit=True, connect_timeout=int(self._timeout_s)) as conn:
                name = f"{self.schema}.toolproof_schema" if self.schema else "toolproof_schema"
                row = conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()
        except psycopg.OperationalError as exc:
            if "does not exist" in str(exc):
                raise StoreNotFound(f"no store at {where}: {str(exc).strip()}") from None
            raise
        if row is None or row[0] is None:
            raise StoreNotFound(f"no store at {where}: the database holds no toolproof tables")

    def _migrate(self) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=False) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            if self.schema is not None:
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                conn.execute(f'SET LOCAL search_path TO "{self.schema}"')
            migrate(conn.execute, real="DOUBLE PRECISION", serial="BIGSERIAL PRIMARY KEY", mark="%s",
                    ops=" text_pattern_ops")
            conn.commit()

    _ILIKE = "ILIKE"

    def _prefix(self, column: str, text: str) -> tuple[str, list[Any]]:
        """LIKE 'prefix%' on the lowered column: what its `text_pattern_ops` index answers (a range would
        follow the database's collation, which need not order a prefix's extensions together)."""
        return f"lower({column}) LIKE ? ESCAPE '\\'", [_like(text)]

    def unreachable(self, exc: BaseException) -> bool:
        """A lost or refused connection, a pool that timed out (never a value the database refused)."""
        import psycopg

        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) or super().unreachable(exc)

    def _unavailable(self) -> StoreUnavailable:
        """What a pool that timed out means: which store (redacted), why, and how long it waited."""
        cause, shown = _why_no_connection(self.dsn), redact_text(self.url)
        return StoreUnavailable(f"no connection to {shown} within {self._timeout_s:.1f} s ({cause})", store=shown,
                                cause=cause, waited_s=self._timeout_s)

    # --- sync --------------------------------------------------------------------------------------------------
    # One statement in autocommit borrows a connection and its cursor from the lane (`_Lane`), not from the pool
    # with `connection()`, whose context also enters the connection (a commit that has nothing to commit) and
    # times the use, nor with `getconn`/`putconn` (locks, logging, stats); reusing the cursor saves making one.
    def _run(self, sql: str, params: Sequence[Any] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        lane = self._lane
        try:
            conn, cur, until, poller = lane.take()
        except Exception as exc:
            if _pool_timeout(exc):
                raise self._unavailable() from exc
            raise
        try:
            cur.execute(_pg(sql), storable_params(params))
            rows = cur.fetchall() if cur.description is not None else []
            return cur.rowcount, rows
        finally:
            lane.give(conn, cur, until, poller)

    def _run_settle(self, sql: str, params: Sequence[Any]) -> int:
        """Settle; once more on a connection that broke under it (the statement is conditional on the intent
        still being in flight, so a second run never settles twice)."""
        lane = self._settle_lane
        for attempt in (1, 2):
            try:
                conn, cur, until, poller = lane.take()
                try:
                    return int(cur.execute(_pg(sql), storable_params(params)).rowcount)
                finally:
                    lane.give(conn, cur, until, poller)
            except Exception as exc:
                if attempt == 2 or not _broken(exc):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def journal_finish(self, key: str, owner: str, status: FinishStatus, outcome: Any, now: float) -> bool:
        return self._run_settle(SQL_FINISH, (status, None if outcome is None else dumps(outcome), now, key, owner)) == 1

    def journal_release(self, key: str, owner: str) -> bool:
        return self._run_settle(SQL_RELEASE, (key, owner)) == 1

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        lane = self._lane
        conn, cur, until, poller = lane.take()
        try:
            with conn.transaction():
                cur.executemany(_pg(sql), [storable_params(row) for row in rows])
        finally:
            lane.give(conn, cur, until, poller)

    def _chained(self, write: Callable[[ChainRun], int]) -> int:
        """One transaction holding a transaction-level advisory lock of this schema's chain: writers in other
        processes and hosts wait for it, so each row is chained to the one before it."""
        lane = self._lane
        conn, cur, until, poller = lane.take()

        def run(sql: str, rows: Sequence[Sequence[Any]]) -> tuple[int, list[tuple[Any, ...]]]:
            if len(rows) == 1:
                cur.execute(_pg(sql), rows[0])
                return cur.rowcount, cur.fetchall() if cur.description is not None else []
            cur.executemany(_pg(sql), rows)
            return cur.rowcount, []

        try:
            with conn.transaction():
                cur.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.toolproof_chain'))")
                return write(run)
        finally:
            lane.give(conn, cur, until, poller)

    # --- async: the journal's hot statements on the event loop -------------------------------------------------
    async def _apool(self, settle: bool = False) -> Any:
        """The running loop's async pool of this store's URL (shared with the other stores on it)."""
        from psycopg_pool import AsyncConnectionPool

        kwargs, name = (self._settle_kwargs, "toolproof-async-settle") if settle else (self._kwargs, "toolproof-async")
        return await POOLS.apool(self._keys[settle], lambda: self._make_pool(AsyncConnectionPool, kwargs, name))

    async def _arun(self, sql: str, params: Sequence[Any] = (), *, settle: bool = False) -> tuple[int, list[Any]]:
        for attempt in (1, 2):
            try:
                return await self._arun_once(sql, params, settle)
            except Exception as exc:
                if not settle or attempt == 2 or not _broken(exc):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _arun_once(self, sql: str, params: Sequence[Any], settle: bool) -> tuple[int, list[Any]]:
        pool = await self._apool(settle)
        try:
            conn = await pool.getconn()  # not `connection()`: see `_run`
        except Exception as exc:
            if _pool_timeout(exc):
                raise await asyncio.to_thread(self._unavailable) from exc
            raise
        try:
            cur = await conn.execute(_pg(sql), storable_params(params))
            rows = await cur.fetchall() if cur.description is not None else []
            return int(cur.rowcount), rows
        finally:
            await pool.putconn(conn)

    async def ajournal_claim(self, intent: Intent) -> bool:
        count, _ = await self._arun(SQL_CLAIM, intent_params(intent))
        return count == 1

    async def ajournal_get(self, key: str) -> Intent | None:
        _, rows = await self._arun(SQL_GET, (key,))
        return intent_from_row(rows[0]) if rows else None

    async def ajournal_for_operation(self, operation_id: str) -> Intent | None:
        _, rows = await self._arun(SQL_FOR_OPERATION, (operation_id,))
        return intent_from_row(rows[0]) if rows else None

    async def ajournal_finish(self, key: str, owner: str, status: FinishStatus, outcome: Any, now: float) -> bool:
        params = (status, None if outcome is None else dumps(outcome), now, key, owner)
        count, _ = await self._arun(SQL_FINISH, params, settle=True)
        return count == 1

    async def ajournal_release(self, key: str, owner: str) -> bool:
        count, _ = await self._arun(SQL_RELEASE, (key, owner), settle=True)
        return count == 1

    async def ajournal_expire(self, now: float, key: str | None = None) -> int:
        if key is None:
            count, _ = await self._arun(SQL_EXPIRE, (now, now))
        else:
            count, _ = await self._arun(SQL_EXPIRE + " AND key = ?", (now, now, key))
        return count

    async def aclose(self) -> None:
        """Close from inside a loop: this loop's async pools close here when this was their last store."""
        if self.closed:
            return
        self.closed = True
        for key in self._keys:
            await POOLS.arelease(key)

    def close(self) -> None:
        """Give the shared pools back; the last store on a URL closes them (async ones whose loop is idle;
        a running loop's close them at its shutdown, or use `aclose()`)."""
        if self.closed:
            return
        self.closed = True
        for key in self._keys:
            POOLS.release(key)

    def drop_schema(self) -> None:
        """Drop this store's schema and everything in it (for throwaway test schemas)."""
        if self.schema is None:
            raise ValueError("drop_schema() needs a store opened with a schema")
        self._run(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
