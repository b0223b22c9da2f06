"""PostgreSQL: many workers on many machines. psycopg 3 with a connection pool; async on the event loop.

`postgresql://user@host:5432/db?schema=toolproof` keeps the tables in their own schema (created if
missing). Every statement runs in autocommit: the journal's claim is a single `INSERT ... ON CONFLICT
DO NOTHING`, committed before dispatch with the server's `synchronous_commit` (on by default).

Settling an intent afterwards runs on connections with `synchronous_commit=off` (`finish_synchronous_commit`
in the URL or the constructor; `on` to make it as durable as the claim). Losing that record to a server
crash is safe: the intent stays `in_flight`, its lease runs out and it becomes `unknown`; it is never re-run.
"""

from __future__ import annotations

import asyncio
import re
import threading
import weakref
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ._sql import (
    SQL_CLAIM,
    SQL_EXPIRE,
    SQL_FINISH,
    SQL_FOR_OPERATION,
    SQL_GET,
    SQL_RELEASE,
    SqlStore,
    dumps,
    intent_from_row,
    intent_params,
    migrate,
    storable_params,
)
from .base import FinishStatus, StoreNotFound, shown_url
from .intent import Intent

_IDENT = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_MIGRATION_LOCK = 0x746F6F6C70726F6F  # "toolproo": one migrator at a time


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
        timeout_s: float = 30.0,
        finish_synchronous_commit: str | None = None,
        create: bool = True,
    ) -> None:
        try:
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # pragma: no cover - the extra is missing
            raise ImportError("PostgresStore needs psycopg: pip install 'toolproof[postgres]'") from exc
        dsn, url_schema, url_finish = split_options(url)
        self.schema = schema or url_schema
        if self.schema is not None and not _IDENT.fullmatch(self.schema):
            raise ValueError(f"schema must be a lower-case SQL identifier, got {self.schema!r}")
        self.dsn = dsn
        self.url = url
        self._max_size = max_size
        self._timeout_s = timeout_s
        self._kwargs: dict[str, Any] = {"autocommit": True}
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
        self._pool = ConnectionPool(dsn, kwargs=self._kwargs, min_size=1, max_size=max_size, timeout=timeout_s,
                                    open=True, name="toolproof")
        self._settle_pool = ConnectionPool(dsn, kwargs=self._settle_kwargs, min_size=1, max_size=max_size,
                                           timeout=timeout_s, open=True, name="toolproof-settle")
        self._apools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self._settle_apools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self._apools_lock = threading.Lock()

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
            migrate(conn.execute, real="DOUBLE PRECISION", serial="BIGSERIAL PRIMARY KEY", mark="%s")
            conn.commit()

    def unreachable(self, exc: BaseException) -> bool:
        """A lost or refused connection, a pool that timed out (never a value the database refused)."""
        import psycopg

        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) or super().unreachable(exc)

    # --- sync --------------------------------------------------------------------------------------------------
    def _run(self, sql: str, params: Sequence[Any] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        with self._pool.connection() as conn:
            cur = conn.execute(_pg(sql), storable_params(params))
            rows = cur.fetchall() if cur.description is not None else []
            return cur.rowcount, rows

    def _run_settle(self, sql: str, params: Sequence[Any]) -> int:
        with self._settle_pool.connection() as conn:
            return int(conn.execute(_pg(sql), storable_params(params)).rowcount)

    def journal_finish(self, key: str, owner: str, status: FinishStatus, outcome: Any, now: float) -> bool:
        return self._run_settle(SQL_FINISH, (status, None if outcome is None else dumps(outcome), now, key, owner)) == 1

    def journal_release(self, key: str, owner: str) -> bool:
        return self._run_settle(SQL_RELEASE, (key, owner)) == 1

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(_pg(sql), [storable_params(row) for row in rows])

    # --- async: the journal's hot statements on the event loop -------------------------------------------------
    async def _apool(self, settle: bool = False) -> Any:
        """The async pool of the running loop (pools are bound to their loop), created on first use."""
        from psycopg_pool import AsyncConnectionPool

        pools = self._settle_apools if settle else self._apools
        loop = asyncio.get_running_loop()
        pool = pools.get(loop)
        if pool is None:
            pool = AsyncConnectionPool(self.dsn, kwargs=self._settle_kwargs if settle else self._kwargs, min_size=1,
                                       max_size=self._max_size, timeout=self._timeout_s, open=False,
                                       name="toolproof-async")
            with self._apools_lock:
                existing = pools.get(loop)
                if existing is None:
                    pools[loop] = pool
            if existing is not None:
                return existing
            await pool.open()
        return pool

    async def _arun(self, sql: str, params: Sequence[Any] = (), *, settle: bool = False) -> tuple[int, list[Any]]:
        pool = await self._apool(settle)
        async with pool.connection() as conn:
            cur = await conn.execute(_pg(sql), storable_params(params))
            rows = await cur.fetchall() if cur.description is not None else []
            return int(cur.rowcount), rows

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
        loop = asyncio.get_running_loop()
        for pools in (self._apools, self._settle_apools):
            pool = pools.pop(loop, None)
            if pool is not None:
                await pool.close()
        await asyncio.to_thread(self.close)  # the sync pools join their worker threads

    def close(self) -> None:
        """Close the sync pools, and async pools whose loop is idle; use `aclose()` from inside a loop."""
        self.closed = True
        for pools in (self._apools, self._settle_apools):
            for loop, pool in list(pools.items()):
                pools.pop(loop, None)
                if not loop.is_closed() and not loop.is_running():
                    loop.run_until_complete(pool.close())
        self._pool.close()
        self._settle_pool.close()

    def drop_schema(self) -> None:
        """Drop this store's schema and everything in it (for throwaway test schemas)."""
        if self.schema is None:
            raise ValueError("drop_schema() needs a store opened with a schema")
        self._run(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
