"""What the gateway's operations layer costs per call: the plain `Runner` against the gateway's runner with
metrics, the request-size check and two local `[[limits]]` rules, on the same trivial async read tool, in
the same run (in process: no MCP hop, so the difference is the layer itself). Also the response-cap check
on an ordinary small upstream answer.

Run: `python -m benchmarks --only bench_gateway_ops` (or this file; `--quick` for a short run).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

import mcp_types as types

from benchmarks._harness import Row, per_call_us
from toolproof import Runner, Toolset, tool
from toolproof.mcp._caps import ResponseCaps, measure
from toolproof.mcp._limits import Limiter, LimitRule
from toolproof.mcp._metrics import GatewayMetrics
from toolproof.mcp._ops import GatewayRunner
from toolproof.stores import MemoryStore


@tool(effect="read")
async def echo(text: str) -> str:
    """Echo the text."""
    return text


def _runners() -> tuple[Runner, GatewayRunner]:
    toolset = Toolset([echo])
    plain = Runner(toolset, store=MemoryStore())
    rules = [LimitRule("per-caller", rate=1e9, burst=10**9), LimitRule("echo", rate=1e9, burst=10**9, tool="echo",
                                                                       per=["caller", "tool"])]
    ops = GatewayRunner(toolset, store=MemoryStore(), metrics=GatewayMetrics(), limiter=Limiter(rules))
    return plain, ops


async def _batch(runner: Runner, n: int) -> float:
    from toolproof import CallContext

    ctx = CallContext(principal="alice", conversation_id="c1")
    start = time.perf_counter()
    for _ in range(n):
        envelope = await runner.call("echo", {"text": "hi"}, context=ctx)
        assert envelope.ok
    return (time.perf_counter() - start) / n * 1e6


async def _measure(batches: int, n: int) -> tuple[list[float], list[float]]:
    plain, ops = _runners()
    await _batch(plain, n)
    await _batch(ops, n)
    a: list[float] = []
    b: list[float] = []
    for _ in range(batches):  # alternate, so machine noise hits both sides
        a.append(await _batch(plain, n))
        b.append(await _batch(ops, n))
    plain.close()
    ops.close()
    return a, b


def run(quick: bool) -> list[Row]:
    batches, n = (5, 500) if quick else (15, 2000)
    plain, ops = asyncio.run(_measure(batches, n))
    base, value = statistics.median(plain), statistics.median(ops)
    small = types.CallToolResult(content=[types.TextContent(text='{"time": "2031-01-15T10:00:00Z"}')],
                                 structured_content={"time": "2031-01-15T10:00:00Z"})
    caps = ResponseCaps()
    cap_us = per_call_us(lambda: measure(small, caps.max_response_bytes), number=20_000)
    return [
        {"benchmark": "gateway_ops", "case": "Runner.call: gateway runner (metrics, 2 limits, size check) vs plain",
         "value": round(value, 2), "unit": "µs/call", "baseline": round(base, 2), "ratio": round(value / base, 3)},
        {"benchmark": "gateway_ops", "case": "added per call (median difference)", "value": round(value - base, 2),
         "unit": "µs", "baseline": None, "ratio": None},
        {"benchmark": "gateway_ops", "case": "response-cap check of a small answer (text + structured)",
         "value": round(cap_us, 2), "unit": "µs", "baseline": None, "ratio": None},
    ]


if __name__ == "__main__":
    from benchmarks._harness import print_rows

    rows: list[dict[str, Any]] = run("--quick" in sys.argv)
    print_rows("gateway operations layer, per call (same run)", rows)
