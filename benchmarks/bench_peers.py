"""Overhead of invoking one plain `def` tool: toolproof's `Runner.call_sync` and `await Runner.call` next to
what pydantic-ai, openai-agents and MCPServer do per call (validate the JSON arguments, run the function),
all measured in the same run, as µs/call and as a ratio to calling the bare function.

Peers are optional (`pip install -e '.[peers]'`); a missing one gets a "not installed" row. How each peer
is invoked is in its driver's `overhead_invokers` docstring under `benchmarks/peers/`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks._harness import Row, machine, per_call_us, print_rows
from benchmarks.peers._common import plain_place_order

ARGS = {"crop": "onion", "quantity_kg": 400, "delivery_date": "2026-12-03"}
PARSED = {"crop": "onion", "quantity_kg": 400.0, "delivery_date": dt.date(2026, 12, 3)}
DRIVERS = ("_toolproof", "_pydantic_ai", "_openai_agents", "_mcp")


def _async_per_call_us(loop: asyncio.AbstractEventLoop, fn: Callable[[], Awaitable[Any]], *, number: int,
                       repeat: int = 5) -> float:
    """Median µs per awaited call, `number` calls per sample, all inside one running event loop."""

    async def many(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            await fn()
        return (time.perf_counter() - start) / n * 1e6

    loop.run_until_complete(many(min(number, 500)))
    return statistics.median(loop.run_until_complete(many(number)) for _ in range(repeat))


def run(quick: bool = False) -> list[Row]:
    number = 20_000 if quick else 100_000
    threaded = 1_000 if quick else 5_000  # peers hop to a worker thread per call: ~100 µs each
    b = "peers: plain def tool"

    def bare() -> object:
        return plain_place_order(**PARSED)

    t_bare = per_call_us(bare, number=number)
    rows: list[Row] = [{"benchmark": b, "case": "bare function", "value": t_bare, "unit": "µs/call"}]
    loop = asyncio.new_event_loop()
    try:
        for name in DRIVERS:
            driver = importlib.import_module(f"benchmarks.peers.{name}")
            if not driver.available():
                rows.append({"benchmark": b, "case": driver.NAME, "value": "n/a", "unit": "",
                             "note": "not installed (the 'peers' extra)"})
                continue
            for case, (kind, fn) in driver.overhead_invokers(plain_place_order, ARGS).items():
                if kind == "sync":
                    t = per_call_us(fn, number=number)
                else:
                    n = number if driver.DIST == "toolproof" else threaded
                    t = _async_per_call_us(loop, fn, number=n)
                rows.append({"benchmark": b, "case": case, "value": t, "unit": "µs/call", "baseline": "bare function",
                             "ratio": t / t_bare, "note": f"+{t - t_bare:.2f} µs"})
    finally:
        loop.close()
    return rows


if __name__ == "__main__":
    import sys

    print_rows(f"overhead of invoking a plain def tool ({machine()})", run(quick="--quick" in sys.argv))
