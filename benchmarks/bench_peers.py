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

from benchmarks._harness import Row, machine, print_rows
from benchmarks.peers._common import plain_place_order

ARGS = {"crop": "onion", "quantity_kg": 400, "delivery_date": "2026-12-03"}
PARSED = {"crop": "onion", "quantity_kg": 400.0, "delivery_date": dt.date(2026, 12, 3)}
DRIVERS = ("_toolproof", "_pydantic_ai", "_openai_agents", "_mcp")


def _sync_sample(fn: Callable[[], Any], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


async def _async_sample(fn: Callable[[], Awaitable[Any]], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await fn()
    return (time.perf_counter() - start) / n * 1e6


def run(quick: bool = False) -> list[Row]:
    """Samples are taken round-robin (every case once per round, 5 rounds, medians), so a busy machine slows
    all cases alike and the ratios stay comparable."""
    number = 4_000 if quick else 20_000  # calls per sample for the in-process paths
    threaded = 400 if quick else 2_000  # the peers hop to a worker thread per call: ~100 µs each
    b = "peers: plain def tool"

    def bare() -> object:
        return plain_place_order(**PARSED)

    cases: dict[str, tuple[str, Any, int]] = {"bare function": ("sync", bare, number)}
    rows: list[Row] = []
    for name in DRIVERS:
        driver = importlib.import_module(f"benchmarks.peers.{name}")
        if not driver.available():
            rows.append({"benchmark": b, "case": driver.NAME, "value": "n/a", "unit": "",
                         "note": "not installed (the 'peers' extra)"})
            continue
        n = number if driver.DIST == "toolproof" else threaded
        for case, (kind, fn) in driver.overhead_invokers(plain_place_order, ARGS).items():
            cases[case] = (kind, fn, n)
    loop = asyncio.new_event_loop()
    samples: dict[str, list[float]] = {case: [] for case in cases}
    try:
        for round_ in range(6):  # round 0 warms up and is discarded
            for case, (kind, fn, n) in cases.items():
                n = max(n // 10, 50) if round_ == 0 else n
                t = _sync_sample(fn, n) if kind == "sync" else loop.run_until_complete(_async_sample(fn, n))
                if round_:
                    samples[case].append(t)
    finally:
        loop.close()
    t_bare = statistics.median(samples["bare function"])
    measured: list[Row] = [{"benchmark": b, "case": "bare function", "value": t_bare, "unit": "µs/call"}]
    t_tp = statistics.median(samples.get("toolproof Runner.call_sync") or [float("nan")])
    for case, values in samples.items():
        if case != "bare function":
            t = statistics.median(values)
            note = f"+{t - t_bare:.2f} µs" + ("" if case.startswith("toolproof") else f"; {t / t_tp:.1f}x call_sync")
            measured.append({"benchmark": b, "case": case, "value": t, "unit": "µs/call",
                             "baseline": "bare function", "ratio": t / t_bare, "note": note})
    return measured + rows


if __name__ == "__main__":
    import sys

    print_rows(f"overhead of invoking a plain def tool ({machine()})", run(quick="--quick" in sys.argv))
