"""A SQLite store whose file is removed or replaced under a running process: that process refuses its writes
(JOURNAL_UNAVAILABLE naming the path) instead of writing into the unlinked file, while a new process on the
path dispatches; each write runs once. Two real processes, real files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._data import REPO_ROOT
from toolproof.stores import SqliteStore, StoreUnavailable

WORKER = Path(__file__).resolve().parent / "sqlite_file_worker.py"


class Worker:
    def __init__(self, store: Path, effects: Path) -> None:
        env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT / 'src'}{os.pathsep}{REPO_ROOT}"}
        self.proc = subprocess.Popen([sys.executable, str(WORKER), str(store), str(effects)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def write(self, conversation: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(conversation + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read() if self.proc.stderr else ""
        envelope: dict[str, Any] = json.loads(line)
        return envelope

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_an_old_process_refuses_to_write_into_a_removed_or_replaced_store_file(how: str, tmp_path: Path) -> None:
    store, effects = tmp_path / "journal.sqlite3", tmp_path / "effects.sqlite3"
    old = Worker(store, effects)
    try:
        assert old.write("c0")["ok"]
        _remove(store)
        if how == "replaced":  # a new process opens the path: a fresh, empty store; it dispatches c1
            new = Worker(store, effects)
            first = new.write("c1")
            new.close()
            assert first["ok"] and not first["meta"].get("replayed")
        refused = old.write("c1")
    finally:
        old.close()
    error = refused["error"]
    assert error["code"] == "JOURNAL_UNAVAILABLE" and error["class"] == "transient_upstream"
    assert f"the store file {store} was {how}" in error["message"] and "was not sent" in error["message"]
    assert error["state"]["cause"] == f"file {how}"
    with sqlite3.connect(effects) as db:  # c0 once; c1 once (replaced) or never (removed): never twice
        rows = dict(db.execute("SELECT conversation, COUNT(*) FROM invoices GROUP BY conversation").fetchall())
    assert rows == ({"c0": 1, "c1": 1} if how == "replaced" else {"c0": 1})
    if how == "removed":
        assert not store.exists()  # nothing recreated the file behind the operator's back


def test_a_replaced_file_is_refused_for_reads_and_audit_too(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = SqliteStore(path)
    os.replace(SqliteStore(tmp_path / "other.sqlite3").path, path)
    with pytest.raises(StoreUnavailable) as caught:
        store.list_stops()
    assert caught.value.cause == "file replaced" and str(path) in str(caught.value)
    assert store.unreachable(caught.value)  # the audit writer keeps its records for later, not drops them
    store.close()



def test_a_relative_path_is_still_the_same_file_after_a_change_of_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    store = SqliteStore("rel.sqlite3")
    monkeypatch.chdir(tmp_path)  # "rel.sqlite3" names no file here; the store's file is unchanged
    assert store.list_stops() == []
    store.close()
