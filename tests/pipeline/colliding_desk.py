"""A toolset for `toolproof serve` whose tools have parameters named like a helper's own (`name`, `fn`,
`label`, `args`, `kwargs`) and one whose sync handler raises StopIteration; every write is counted in a SQLite
table at `COLLIDING_DESK_PATH`, so a test in another process can count effects."""

from __future__ import annotations

import os
import sqlite3

import toolproof


def _db() -> sqlite3.Connection:
    db = sqlite3.connect(os.environ.get("COLLIDING_DESK_PATH", ":memory:"), isolation_level=None)
    db.execute("CREATE TABLE IF NOT EXISTS labels (name TEXT, fn TEXT)")
    return db


@toolproof.tool(effect="write", idempotent=False)
def print_label(name: str, fn: str, label: str = "", args: str = "", kwargs: str = "") -> dict[str, str]:
    """Print one shipping label for the named parcel."""
    with _db() as db:
        db.execute("INSERT INTO labels VALUES (?, ?)", (name, fn))
    return {"printed": name}


@toolproof.tool(effect="write", idempotent=False, timeout_s=5.0)
def print_label_bounded(name: str, fn: str) -> dict[str, str]:
    """Print one shipping label for the named parcel, within five seconds."""
    with _db() as db:
        db.execute("INSERT INTO labels VALUES (?, ?)", (name, fn))
    return {"printed": name}


@toolproof.tool(effect="read", timeout_s=5.0)
def next_label(queue: str) -> str:
    """Read the next label of a queue (an empty queue raises StopIteration, as `next()` does)."""
    raise StopIteration(queue)


toolset = toolproof.Toolset([print_label, print_label_bounded, next_label])
