"""The hash chain over audit and stop records, on a real SQLite file and a real PostgreSQL schema: rows written
through a Runner, then tampered with directly in the database (as someone with access to it would), then
`toolproof audit verify` run as a real CLI process names the first broken link; a head kept elsewhere catches a
cut tail."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.cli._run import json_lines, toolproof_cli
from tests.pg_support import drop_schema, unique_schema, with_schema
from toolproof import Runner, Tool, Toolset
from toolproof.stores import open_store

Execute = Callable[[str], None]


def _lookup(args: dict[str, Any], ctx: Any) -> dict[str, int]:
    if args["n"] < 0:
        raise RuntimeError("the backend crashed")
    return {"n": args["n"]}


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
          "additionalProperties": False}


@pytest.fixture(params=["sqlite", "postgres"])
def chained(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Execute]]:
    """A store URL holding 12 audit rows and 2 stops, and a way to run raw SQL on it."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'tp.sqlite3'}"

        def execute(sql: str) -> None:
            with sqlite3.connect(tmp_path / "tp.sqlite3") as db:
                db.execute(sql)

        schema = None
    else:
        dsn = request.getfixturevalue("pg_dsn")
        schema = unique_schema("tp_chain")
        url = with_schema(dsn, schema)

        def execute(sql: str) -> None:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'SET search_path TO "{schema}"')
                conn.execute(sql)

    store = open_store(url)
    runner = Runner(Toolset([Tool.from_schema("lookup", "Look up.", SCHEMA, _lookup, effect="read")]), store=store)
    for n in (*range(10), -1, -2):  # 10 successes, 2 crashes that give up (a stop each)
        runner.call_sync("lookup", {"n": n})
    runner.close()
    try:
        yield url, execute
    finally:
        if schema is not None:
            drop_schema(request.getfixturevalue("pg_dsn"), schema)


def verify(url: str, *extra: str, code: int = 0) -> str:
    return toolproof_cli("audit", "verify", "--store", url, *extra, code=code).stdout


def test_an_intact_chain_verifies_and_prints_its_heads(chained: tuple[str, Execute]) -> None:
    url, _ = chained
    out = verify(url)
    assert re.search(r"audit: intact, 12 rows; head [0-9a-f]{64} \(row 12\)", out), out
    assert re.search(r"stops: intact, 2 rows; head [0-9a-f]{64}", out), out
    rows = json_lines(verify(url, "--json"))
    assert [(r["kind"], r["ok"], r["rows"]) for r in rows] == [("audit", True, 12), ("stops", True, 2)]


def test_an_edited_audit_row_is_named(chained: tuple[str, Execute]) -> None:
    url, execute = chained
    execute("UPDATE toolproof_audit SET arguments = '{\"n\":99}' WHERE id = 5")
    out = verify(url, code=1)
    assert "audit: BROKEN at row 5: the row's content does not give its digest: it was edited" in out, out
    assert "stops: intact" in out


def test_a_deleted_audit_row_breaks_the_link_after_it(chained: tuple[str, Execute]) -> None:
    url, execute = chained
    execute("DELETE FROM toolproof_audit WHERE id = 7")
    out = verify(url, code=1)
    assert "audit: BROKEN at row 8: the row before it is not the one it was chained to" in out, out


def test_an_edited_stop_is_named_and_resolving_one_is_not_tampering(chained: tuple[str, Execute]) -> None:
    url, execute = chained
    toolproof_cli("stops", "list", "--store", url)
    execute("UPDATE toolproof_stops SET resolved_at = 1.0, resolution = 'checked'")  # what resolving changes
    assert "stops: intact" in verify(url)
    execute("UPDATE toolproof_stops SET message = 'nothing happened' WHERE chain_seq = 2")
    out = verify(url, code=1)
    assert re.search(r"stops: BROKEN at row \S+: the row's content does not give its digest", out), out


def test_a_head_kept_elsewhere_catches_a_cut_tail(chained: tuple[str, Execute]) -> None:
    url, execute = chained
    head = re.search(r"audit: intact, 12 rows; head ([0-9a-f]{64})", verify(url))
    assert head is not None
    assert "audit: intact" in verify(url, "--anchor", head.group(1))
    execute("DELETE FROM toolproof_audit WHERE id >= 11")  # the last two rows: the chain before them holds
    out = verify(url, "--anchor", head.group(1), code=1)
    assert "audit: intact, 10 rows" in out and f"anchor {head.group(1)}: NOT FOUND" in out, out
