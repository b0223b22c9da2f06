"""A password inside a URL that a model passes as an argument value is redacted wherever the call is kept: the
audit trail, the journal (arguments and replayed outcome), the stop records and the inbox's pages, on a real
SQLite file, the same way it is in a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import toolproof
from toolproof import CallContext, Runner, Toolset
from toolproof.inbox import create_app
from toolproof.stores import SqliteStore

PASSWORDS = ("hunter2-pass-0451", "s3cret-pg-pw-77", "tok9-in-user")
URLS = (f"https://alice:{PASSWORDS[0]}@files.example/report.csv",
        f"postgresql://app:{PASSWORDS[1]}@db.internal:5432/app",
        f"redis://{PASSWORDS[2]}:x@cache:6379/0")


@toolproof.tool(effect="write")
def register_source(source_url: str, mirrors: list[str]) -> dict[str, Any]:
    """Register a data source by its URL.

    Use it to add a source. Returns what was registered.
    """
    if "crash" in mirrors:
        raise RuntimeError(f"could not reach {source_url}")
    return {"registered": source_url, "mirrors": mirrors}


@toolproof.tool(effect="read")
def ping(target: str) -> dict[str, str]:
    """Ping a URL.

    Use it to check a host. Returns the target.
    """
    return {"target": target}


def kept(store: SqliteStore) -> str:
    rows: list[Any] = [*store.list_audit(limit=1000), *store.list_stops(limit=1000),
                       *store.journal_list(limit=1000)]
    return json.dumps(rows, default=repr)


@pytest.mark.parametrize("url", URLS)
def test_url_passwords_in_arguments_never_land_in_clear(tmp_path: Path, url: str) -> None:
    store = SqliteStore(str(tmp_path / "tp.sqlite3"))
    runner = Runner(Toolset([register_source, ping]), store=store)
    args, c1 = {"source_url": url, "mirrors": [url]}, CallContext(conversation_id="c1")
    first = runner.call_sync("register_source", args, context=c1)
    assert first.ok and first.result["registered"] == url  # the tool and the model see the value as sent
    again = runner.call_sync("register_source", args, context=c1)
    assert again.meta.replayed is True
    assert runner.call_sync("ping", {"target": url}).ok
    assert not runner.call_sync("register_source", {"source_url": url, "mirrors": ["crash"]},
                                context=CallContext(conversation_id="c2")).ok
    runner.flush()
    everything = kept(store)
    assert "[REDACTED]@" in everything
    for password in PASSWORDS:
        assert password not in everything
    pages = TestClient(create_app(store), base_url="http://127.0.0.1:8765")
    for path in ("/audit", "/stops", "/dashboard"):
        page = pages.get(path)
        assert page.status_code == 200
        for password in PASSWORDS:
            assert password not in page.text, path
    runner.close()
    store.close()
