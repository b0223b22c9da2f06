"""No store holds a secret in clear: the journal, audit rows and stop records, read back from a real SQLite
file, a real PostgreSQL server and the CLI (a subprocess), and the outcome replayed to a repeated write.

The tool takes a `toolproof.Secret` parameter, an `api_token` argument and a `password` two levels down, and
echoes all three in its result and its error message, so a leak anywhere shows up as the secret's text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest

import toolproof
from tests.pg_support import schema_url
from toolproof import CallContext, Runner, Toolset
from toolproof.contract._errors import TransientUpstream
from toolproof.contract._redaction import REDACTED
from toolproof.orchestration.policy import RetryPolicy
from toolproof.stores import PostgresStore, SqliteStore, Store

CODE = "code-7f3a9e-SECRET"
TOKEN = "tok-live-91b2c3-SECRET"
DB_PASSWORD = "pw-nested-5d6e-SECRET"
SECRETS = (CODE, TOKEN, DB_PASSWORD)


def _tools() -> Toolset:
    @toolproof.tool(effect="write")
    def deploy(service: str, code: Annotated[str, toolproof.Secret], api_token: str,
               config: dict[str, Any]) -> dict[str, Any]:
        """Deploy a service with its configuration.

        Use it to roll out a service. Do not use it to read the state. Returns what was deployed.

        Args:
            service: The service name.
            code: The one-time deploy code.
            api_token: The platform token.
            config: The service configuration.
        """
        if service == "flaky":
            raise TransientUpstream(f"gateway timed out after api_token={api_token} code {code}")
        return {"deployed": service, "echo": f"used {code} and {api_token}", "config": config}

    return Toolset([deploy])


def _arguments(service: str) -> dict[str, Any]:
    return {"service": service, "code": CODE, "api_token": TOKEN,
            "config": {"db": {"password": DB_PASSWORD, "host": "db1"}, "replicas": 2}}


def _run(store: Store) -> Runner:
    """A write that succeeds and is repeated, one whose outcome is unknown, and one that fails validation."""
    runner = Runner(_tools(), store=store, retry=RetryPolicy(base_delay_s=0.0))
    ctx = CallContext(conversation_id="conv-1", principal="ops")
    first = runner.call_sync("deploy", _arguments("web"), context=ctx)
    assert first.ok and CODE in json.dumps(first.to_dict())  # the caller gets the real result
    again = runner.call_sync("deploy", _arguments("web"), context=ctx)
    assert again.meta.replayed
    replayed = json.dumps(again.to_dict())
    assert not [s for s in SECRETS if s in replayed], replayed  # the stored, replayed result leaks nothing
    assert again.result["config"]["db"] == {"password": REDACTED, "host": "db1"}
    unknown = runner.call_sync("deploy", _arguments("flaky"), context=ctx)
    assert unknown.error is not None and unknown.error.error_class == "outcome_unknown"
    bad = json.dumps({**_arguments("web"), "service": 5})
    assert runner.call_sync("deploy", bad, context=ctx).error is not None  # raw text that fails validation
    runner.close()
    return runner


def _check_rows(store: Store) -> None:
    """Everything the store gives back, as the CLI and the API see it."""
    intents = store.journal_list()
    audit = store.list_audit(limit=1000)
    stops = store.list_stops(limit=1000)
    assert len(intents) == 2 and len(audit) >= 3 and len(stops) >= 1
    dump = json.dumps([[i.to_dict() for i in intents], [a.arguments for a in audit],
                       [(s.arguments, s.message) for s in stops]], default=str)
    assert not [s for s in SECRETS if s in dump], dump
    web = next(i for i in intents if i.arguments["service"] == "web")
    assert web.arguments == {"service": "web", "code": REDACTED, "api_token": REDACTED,
                             "config": {"db": {"password": REDACTED, "host": "db1"}, "replicas": 2}}
    assert REDACTED in stops[0].message


def _cli(url: str, *command: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPROOF_")}
    proc = subprocess.run([sys.executable, "-m", "toolproof", *command, "--store", url], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _check_cli(url: str) -> None:
    journal = [json.loads(line) for line in _cli(url, "journal", "list", "--json").splitlines()]
    assert len(journal) == 2
    audit = _cli(url, "audit", "tail", "--json", "--limit", "1000")
    stops = _cli(url, "stops", "list", "--json", "--status", "all")
    assert audit.strip() and stops.strip()
    for out in (json.dumps(journal), audit, stops):
        assert not [s for s in SECRETS if s in out], out
    assert REDACTED in json.dumps(journal) and REDACTED in stops


def test_sqlite_file_holds_no_secret(tmp_path: Path) -> None:
    path = tmp_path / "toolproof.sqlite3"
    _run(SqliteStore(path))
    reopened = SqliteStore(path)
    try:
        _check_rows(reopened)
    finally:
        reopened.close()
    for file in tmp_path.iterdir():  # the database and any journal or WAL file, byte for byte
        data = file.read_bytes()
        assert not [s for s in SECRETS if s.encode() in data], file
    _check_cli(f"sqlite:///{path}")


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with schema_url() as url:
        yield url


def test_postgres_holds_no_secret(pg_url: str) -> None:
    import psycopg

    _run(PostgresStore(pg_url, max_size=2))
    reopened = PostgresStore(pg_url, max_size=2)
    try:
        _check_rows(reopened)
    finally:
        reopened.close()
    dsn, schema = pg_url.split("?schema=")
    with psycopg.connect(dsn) as conn:  # every row of every table, as the server holds it
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))]
        assert len(tables) >= 3
        for table in tables:
            rows = conn.execute(f'SELECT row_to_json(t)::text FROM "{schema}"."{table}" t').fetchall()
            text = "\n".join(r[0] for r in rows)
            assert not [s for s in SECRETS if s in text], (table, text)
    _check_cli(pg_url)


def test_untyped_parameters_are_walked_for_secrets_too(tmp_path: Path) -> None:
    """`Any` and a bare `list` leave the keys inside open: a password there is redacted like any other."""

    @toolproof.tool(effect="write")
    def store_blob(name: str, data: Any, items: list) -> str:  # type: ignore[type-arg]
        """Store a blob of data under a name. Use it to save data. Returns the name."""
        return name

    path = tmp_path / "toolproof.sqlite3"
    runner = Runner(Toolset([store_blob]), store=SqliteStore(path))
    sent = {"name": "n", "data": {"db": {"password": DB_PASSWORD}}, "items": [{"api_token": TOKEN}]}
    assert runner.call_sync("store_blob", sent, context=CallContext(conversation_id="c")).ok
    runner.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert DB_PASSWORD.encode() not in raw and TOKEN.encode() not in raw
    assert REDACTED in _cli(f"sqlite:///{path}", "journal", "list", "--json")
