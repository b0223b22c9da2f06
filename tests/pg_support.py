"""A real PostgreSQL for tests: `TOOLPROOF_TEST_POSTGRES_DSN`, else the local server, else a throwaway one.

Never skipped: with no server reachable and none that can be started, the tests fail with a message.
Each test run works in its own schema (unique name), dropped afterwards, so parallel runs never collide.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCAL_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def _reachable(dsn: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _throwaway_server() -> Iterator[str]:
    """initdb + pg_ctl in a temporary directory (not as root), else the `pgserver` wheel."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and os.geteuid() != 0:
        tmp = Path(tempfile.mkdtemp(prefix="toolproof-pg-"))
        port = _free_port()
        subprocess.run([initdb, "-D", str(tmp / "data"), "-U", "postgres", "-A", "trust"], check=True,
                       capture_output=True)
        subprocess.run([pg_ctl, "-D", str(tmp / "data"), "-w", "-l", str(tmp / "log"), "-o",
                        f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                       check=True, capture_output=True)
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run([pg_ctl, "-D", str(tmp / "data"), "-m", "immediate", "stop"], capture_output=True)
            shutil.rmtree(tmp, ignore_errors=True)
        return
    try:
        import pgserver  # type: ignore[import-not-found]
    except ImportError:
        raise RuntimeError(
            "No PostgreSQL for the tests: set TOOLPROOF_TEST_POSTGRES_DSN, start a server on 127.0.0.1:5432, "
            "or `pip install pgserver`."
        ) from None
    tmp = Path(tempfile.mkdtemp(prefix="toolproof-pgserver-"))
    server = pgserver.get_server(tmp, cleanup_mode="stop")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def postgres_server() -> Iterator[str]:
    """The DSN of a reachable PostgreSQL server for this test session."""
    dsn = os.environ.get("TOOLPROOF_TEST_POSTGRES_DSN")
    if dsn:
        if not _reachable(dsn):
            raise RuntimeError(f"TOOLPROOF_TEST_POSTGRES_DSN={dsn!r} is set but not reachable")
        yield dsn
        return
    if _reachable(LOCAL_DSN):
        yield LOCAL_DSN
        return
    with _throwaway_server() as started:
        yield started


def unique_schema(prefix: str = "tp_test") -> str:
    return f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:10]}"


def with_schema(dsn: str, schema: str) -> str:
    return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"


def drop_schema(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextmanager
def schema_url() -> Iterator[str]:
    """A URL of the server with a schema of its own, dropped afterwards."""
    with postgres_server() as dsn:
        schema = unique_schema()
        try:
            yield with_schema(dsn, schema)
        finally:
            drop_schema(dsn, schema)
