"""Stores: in memory (default), SQLite (a file; the CLI's default), PostgreSQL (many workers), by URL."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from .._surface import publish_all
from ._base import Store, StoreNotFound, StoreUnavailable, shown_url
from ._memory import MemoryStore
from ._sqlite import SqliteStore

if TYPE_CHECKING:
    from ._postgres import PostgresStore

__all__ = ["FILE_STORE", "MemoryStore", "PostgresStore", "SqliteStore", "Store", "StoreNotFound",
           "StoreUnavailable", "open_store", "store_url"]

ENV_VAR = "TOOLPROOF_STORE"
#: The store of the CLI and the MCP server/gateway when neither `--store` nor `TOOLPROOF_STORE` names one:
#: the long-running commands and the commands that read what they left agree on one file.
FILE_STORE = "sqlite:///.toolproof/toolproof.sqlite3"


def store_url(url: str | None = None, *, default: str = "memory://") -> str:
    """The store URL to use: `url`, else `TOOLPROOF_STORE`, else `default`. The one reader of that variable."""
    return url or os.environ.get(ENV_VAR) or default


def open_store(url: str | None = None, *, create: bool = True) -> Store:
    """A store for a URL: None or `memory://` (in memory), `sqlite:///path`, `postgresql://...`.

    With no URL, `TOOLPROOF_STORE` is read; with neither, the store is in memory and writes no file.
    `create=False` opens only a store that exists (a SQLite file or PostgreSQL database holding toolproof's
    tables) and raises `StoreNotFound` naming what is missing: for commands that only read.
    `sqlite:///relative.db` is relative to the working directory, `sqlite:////abs/path.db` is absolute;
    `?synchronous=NORMAL` chooses SQLite's durability (default FULL; `finish_synchronous`, default NORMAL,
    for settling a claimed intent). `postgresql://...?schema=NAME` keeps the tables in their own schema;
    `&finish_synchronous_commit=on` makes settling as durable as claiming (default off).
    """
    url = store_url(url)
    if not isinstance(url, str):
        raise TypeError(f"store URL must be a string, got {type(url).__name__}")
    if url.startswith("memory:"):
        return MemoryStore()
    if url.startswith("sqlite:"):
        parts = urlsplit(url)
        if not url.startswith("sqlite:///") or parts.netloc:
            raise ValueError(f"SQLite URLs look like sqlite:///relative/path or sqlite:////absolute/path, got {url!r}")
        path = url[len("sqlite:///"):].split("?", 1)[0]
        if not path:
            raise ValueError(f"SQLite URL {url!r} names no file")
        options: dict[str, Any] = dict(parse_qsl(parts.query))
        unknown = set(options) - {"synchronous", "finish_synchronous"}
        if unknown:
            raise ValueError(f"unknown SQLite URL options {sorted(unknown)}; known: synchronous, finish_synchronous")
        return SqliteStore(path, create=create, **options)
    if url.startswith(("postgresql://", "postgres://")):
        from ._postgres import PostgresStore

        return PostgresStore(url, create=create)
    raise ValueError(f"unsupported store URL {shown_url(url)!r}: use memory://, sqlite:///PATH or postgresql://...")


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":  # imported lazily: psycopg is an optional extra
        from ._postgres import PostgresStore

        return PostgresStore
    raise AttributeError(name)

publish_all(globals())
