"""SQLite: one file, WAL, the CLI's default. Several processes may share the file (the UNIQUE key decides).

Durability is explicit: `synchronous=FULL` (the default) makes every commit survive a power cut;
`synchronous=NORMAL` survives a crashed process but may lose the last commits on power loss. Choose it
in the URL: `sqlite:///path/toolproof.sqlite3?synchronous=NORMAL`.

The journal's *claim* (written before dispatch) always gets `synchronous`. Settling an intent afterwards
(`journal_finish`, `journal_release`) gets `finish_synchronous` (default NORMAL: no fsync of its own; the
next claim's fsync carries it). Losing that last record to a power cut is safe: the intent stays
`in_flight`, its lease runs out and it becomes `unknown` for a person to reconcile; it is never re-run.
`?finish_synchronous=FULL` makes the settlement as durable as the claim, at the cost of a second fsync.

The file is the store: one removed or replaced while a process holds it open (a cleanup script, a restore,
`rm` of a "stale" file) would let that process go on writing into a file no one else sees, while new
processes dispatch the same writes again from an empty one. So every statement first checks that the path
still names the file opened (its device and inode, one `stat`); if not, it is refused with
`StoreUnavailable` (cause `file removed` or `file replaced`) and nothing is written into the old file.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from ._base import FinishStatus, StoreNotFound, StoreUnavailable
from ._sql import SQL_FINISH, SQL_RELEASE, ChainRun, SqlStore, dumps, migrate, storable_params

SYNCHRONOUS: Final = ("OFF", "NORMAL", "FULL", "EXTRA")


class SqliteStore(SqlStore):
    """Audit, stops and the write journal in one SQLite file (WAL mode, busy timeout, versioned schema)."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "FULL",
        finish_synchronous: str = "NORMAL",
        busy_timeout_s: float = 30.0,
        create: bool = True,
    ) -> None:
        sync, finish_sync = synchronous.upper(), finish_synchronous.upper()
        for name, value in (("synchronous", sync), ("finish_synchronous", finish_sync)):
            if value not in SYNCHRONOUS:
                raise ValueError(f"{name} must be one of {', '.join(SYNCHRONOUS)}, got {value!r}")
        self.path = str(path)
        self.synchronous = sync
        self.finish_synchronous = finish_sync
        self.url = f"sqlite:///{self.path}?synchronous={sync}&finish_synchronous={finish_sync}"
        if create and self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = _connect(self.path, busy_timeout_s, create)
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        if self.path != ":memory:":
            self._set_wal(busy_timeout_s)
        self._db.execute(f"PRAGMA synchronous = {sync}")
        self._cursor = self._db.cursor()
        self._migrate()
        # Checked by absolute path: a process that changes its directory still names the file it opened.
        self._abspath = os.path.abspath(self.path)
        self._file = None if self.path in (":memory:", "") else _file_id(self._abspath)

    def set_busy_timeout(self, seconds: float) -> None:
        """How long a statement waits for another process's write lock before it fails (a person's console
        answers "not applied" after a few seconds rather than hang for the agents' default 30)."""
        with self._lock:
            self._db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    def _set_wal(self, timeout_s: float) -> None:
        """Switch to WAL. Several processes opening a new file at once can get SQLITE_BUSY here without the
        busy handler being called (SQLite avoids a deadlock), so retry until the timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _migrate(self) -> None:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")  # one migrator at a time across processes
            try:
                migrate(db.execute, real="REAL", serial="INTEGER PRIMARY KEY AUTOINCREMENT", mark="?")
                db.execute("COMMIT")
            except BaseException:
                _rollback(db)
                raise

    def schema_version(self) -> int:
        _, rows = self._run("SELECT MAX(version) FROM toolproof_schema")
        return int(rows[0][0] or 0)

    def unreachable(self, exc: BaseException) -> bool:
        """A locked or unreadable database file (never a value SQLite refused)."""
        return isinstance(exc, sqlite3.OperationalError) or super().unreachable(exc)

    def _check_file(self) -> None:
        """Refuse to go on with a file that is no longer at its path (see the module docstring)."""
        if self._file is None:
            return
        now = _file_id(self._abspath)
        if now == self._file:
            return
        how = "removed" if now is None else "replaced"
        later = "no file is at that path now" if now is None else "another file is at that path now"
        raise StoreUnavailable(
            f"the store file {self.path} was {how} after this process opened it ({later}); nothing more is "
            "written to the old file. Restart this process to open the store at that path again.",
            store=self.path, cause=f"file {how}")

    def _run(self, sql: str, params: Sequence[Any] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        params = storable_params(params)
        with self._lock:
            self._check_file()
            cur = self._cursor  # one cursor, used under the lock and drained before it is released
            cur.execute(sql, params)
            return cur.rowcount, cur.fetchall() if cur.description is not None else []

    def _run_settle(self, sql: str, params: Sequence[Any]) -> int:
        """One settling statement under `finish_synchronous` (see the module docstring)."""
        if self.finish_synchronous == self.synchronous:
            return self._run(sql, params)[0]
        with self._lock:
            self._check_file()
            self._db.execute(f"PRAGMA synchronous = {self.finish_synchronous}")
            try:
                return self._db.execute(sql, storable_params(params)).rowcount
            finally:
                self._db.execute(f"PRAGMA synchronous = {self.synchronous}")

    def journal_finish(self, key: str, owner: str, status: FinishStatus, outcome: Any, now: float) -> bool:
        return self._run_settle(SQL_FINISH, (status, None if outcome is None else dumps(outcome), now, key, owner)) == 1

    def journal_release(self, key: str, owner: str) -> bool:
        return self._run_settle(SQL_RELEASE, (key, owner)) == 1

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._lock:
            self._check_file()
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(sql, [storable_params(row) for row in rows])
                self._db.execute("COMMIT")
            except BaseException:
                _rollback(self._db)
                raise

    def _chained(self, write: Callable[[ChainRun], int]) -> int:
        """One BEGIN IMMEDIATE transaction: SQLite's write lock is the chain lock across processes."""
        db = self._db

        def run(sql: str, rows: Sequence[Sequence[Any]]) -> tuple[int, list[tuple[Any, ...]]]:
            if len(rows) == 1:
                cur = db.execute(sql, rows[0])
                return cur.rowcount, cur.fetchall() if cur.description is not None else []
            cur = db.executemany(sql, rows)
            return cur.rowcount, []

        with self._lock:
            self._check_file()
            db.execute("BEGIN IMMEDIATE")
            try:
                count = write(run)
                db.execute("COMMIT")
            except BaseException:
                _rollback(db)
                raise
        return count

    def close(self) -> None:
        with self._lock:
            self.closed = True
            self._db.close()


def _rollback(db: sqlite3.Connection) -> None:
    """Roll back what is still open. SQLite itself ends the transaction on some errors (`SQLITE_FULL`: a full
    disk); a ROLLBACK then raises "cannot rollback - no transaction is active", which would replace the error
    that says what happened."""
    if db.in_transaction:
        db.execute("ROLLBACK")


def _file_id(path: str) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`; None when there is none."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _connect(path: str, timeout_s: float, create: bool) -> sqlite3.Connection:
    """A connection; with `create=False` only to an existing file that holds toolproof's tables."""
    if create or path == ":memory:":
        return sqlite3.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
    if not Path(path).is_file():
        raise StoreNotFound(f"no store at {path}: the file does not exist")
    uri = f"{Path(path).resolve().as_uri()}?mode=rw"
    db = sqlite3.connect(uri, uri=True, timeout=timeout_s, isolation_level=None, check_same_thread=False)
    try:
        found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'toolproof_schema'").fetchone()
    except sqlite3.DatabaseError as exc:
        db.close()
        raise StoreNotFound(f"no store at {path}: {exc}") from None
    if found is None:
        db.close()
        raise StoreNotFound(f"no store at {path}: the file holds no toolproof tables")
    return db
