"""The wholesaler's own state: prices, stock and an `orders` table whose UNIQUE request key makes
placing an order idempotent where the effect lives (the database decides which call wins)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from datetime import date, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

Grade = Literal["A", "B"]


class Crop(StrEnum):
    ONION = "onion"
    GROUNDNUT = "groundnut"
    JEERA = "jeera"
    COTTON_SEED = "cotton_seed"


CROPS = tuple(c.value for c in Crop)

# Rupees per kg for grade A; grade B is 12% cheaper.
BASE_PRICES_RS_PER_KG = {"onion": 24.0, "groundnut": 92.0, "jeera": 285.0, "cotton_seed": 41.0}
STOCK_KG = {"onion": 18_000, "groundnut": 6_500, "jeera": 900, "cotton_seed": 12_000}

SCHEMA = """
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY,
    buyer_id TEXT NOT NULL,
    crop TEXT NOT NULL,
    grade TEXT NOT NULL,
    quantity_kg REAL NOT NULL,
    delivery_date TEXT NOT NULL,
    price_rs_per_kg REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'placed',
    request_key TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
"""


class Shop:
    """One wholesaler: a SQLite file (or memory) for orders, and a `today` the tools agree on."""

    def __init__(self, path: str | Path = ":memory:", *, today: Callable[[], date] = date.today) -> None:
        self.path = str(path)
        self.today = today
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)

    def price(self, crop: str, grade: str, on: date | None = None) -> float:
        base = BASE_PRICES_RS_PER_KG[crop] * (1.0 if grade == "A" else 0.88)
        day = on or self.today()
        wobble = ((day.toordinal() * 7 + len(crop)) % 9 - 4) / 100  # a deterministic daily move, +-4%
        return round(base * (1 + wobble), 2)

    def stock_kg(self, crop: str, grade: str) -> float:
        booked: float = self._db.execute(
            "SELECT COALESCE(SUM(quantity_kg), 0) FROM orders WHERE crop = ? AND grade = ? AND status = 'placed'",
            (crop, grade),
        ).fetchone()[0]
        share = 0.7 if grade == "A" else 0.3
        return max(STOCK_KG[crop] * share - booked, 0.0)

    def insert_order(
        self, *, buyer_id: str, crop: str, grade: str, quantity_kg: float, delivery_date: date, request_key: str
    ) -> tuple[dict[str, Any], bool]:
        """Insert once per request key; returns (the order, whether this call created it)."""
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO orders (buyer_id, crop, grade, quantity_kg, delivery_date, price_rs_per_kg,"
                " request_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (request_key) DO NOTHING",
                (buyer_id, crop, grade, quantity_kg, delivery_date.isoformat(), self.price(crop, grade),
                 request_key, datetime.now().isoformat(timespec="seconds")),
            )
            created = cur.rowcount == 1
            row = self.order_by_key(request_key)
        assert row is not None
        return row, created

    def order_by_key(self, request_key: str) -> dict[str, Any] | None:
        return self._one("SELECT * FROM orders WHERE request_key = ?", (request_key,))

    def order(self, order_id: int) -> dict[str, Any] | None:
        return self._one("SELECT * FROM orders WHERE id = ?", (order_id,))

    def cancel(self, order_id: int) -> dict[str, Any] | None:
        with self._lock:
            self._db.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (order_id,))
            return self.order(order_id)

    def count_orders(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM orders").fetchone()[0])

    def history(self, crop: str, grade: str, days: int) -> list[tuple[date, float]]:
        today = self.today()
        return [(today - timedelta(days=d), self.price(crop, grade, today - timedelta(days=d)))
                for d in range(days, 0, -1)]

    def _one(self, sql: str, params: tuple[Any, ...]) -> dict[str, Any] | None:
        cur = self._db.execute(sql, params)
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([c[0] for c in cur.description], row, strict=True))

    def close(self) -> None:
        self._db.close()
