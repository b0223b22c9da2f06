"""The gateway's cost: a `tools/call` through `toolproof gateway` against the same call made directly to the
same upstream (`mcp-server-time`), both over stdio with the official SDK client, in the same run. A third
side, a bare pass-through proxy on the SDK alone (`_mcp_passthrough.py`), shows what any MCP hop costs
with this SDK, so toolproof's own share is visible.

Targets (`benchmarks/_harness.py`): the gateway at most 1.05x the bare SDK pass-through proxy at p50 and at
p95, each printed with met / not met; the added p50 over a direct call is printed in ms beside the SDK proxy's
own. Run: `python benchmarks/bench_gateway.py` (`--quick` for a short run). Each side gets its own warm
session; calls alternate between the sides so machine noise hits all of them equally. The SDK client checks
every successful result against the tool's `outputSchema` (`jsonschema`), so that client-side cost is in each
side's latency; it is also measured alone (the envelope's schema against the upstream's own).

The pre-call drift check (mcp/_drift.py) is measured on its own, in one in-process gateway in front of the
same upstream: the same call with the connection's guard off, on (default interval: the listing is usually
fresh, so the check is a clock read and a lookup, plus one amortized re-list per interval), and on with
`drift_recheck_s = 0` (a re-list before every call: the worst case), alternating; and the guard alone in a
tight loop against an empty coroutine.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__" and str(ROOT) not in sys.path:  # run as a script: `benchmarks` is importable
    sys.path.insert(0, str(ROOT))

from benchmarks._harness import TARGETS, targeted  # noqa: E402

PY = sys.executable
UPSTREAM = [PY, "-m", "mcp_server_time", "--local-timezone", "UTC"]
ARGS = {"timezone": "Europe/Paris"}


def _env() -> dict[str, str]:
    paths = [str(ROOT / "src"), str(ROOT)]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return {"PYTHONPATH": os.pathsep.join(paths)}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def _measure(calls: int, warmup: int) -> tuple[list[float], list[float], list[float], tuple[float, float]]:
    """Per-call times (s): direct, gateway, bare proxy; and the SDK client's check of one result against the
    tool's `outputSchema` (µs): the gateway's (the envelope), the direct one's (the upstream's own schema)."""
    direct_params = StdioServerParameters(command=UPSTREAM[0], args=UPSTREAM[1:], cwd=str(ROOT))
    bare_params = StdioServerParameters(
        command=PY, args=[str(ROOT / "benchmarks" / "_mcp_passthrough.py"), *UPSTREAM], env=_env(), cwd=str(ROOT)
    )
    store = f"sqlite:///{tempfile.mkdtemp(prefix='toolproof-bench-')}/gateway.sqlite3"  # never the checkout's
    gateway_params = StdioServerParameters(
        command=PY,
        args=["-m", "toolproof", "gateway", "--upstream", "time=" + " ".join(UPSTREAM), "--trust", "time",
              "--store", store],
        env=_env(),
        cwd=str(ROOT),
    )
    direct_times: list[float] = []
    gateway_times: list[float] = []
    bare_times: list[float] = []
    last: dict[str, Any] = {}
    async with Client(direct_params, read_timeout_seconds=60) as direct, \
            Client(gateway_params, read_timeout_seconds=60) as gateway, \
            Client(bare_params, read_timeout_seconds=60) as bare:
        for client in (direct, gateway, bare):
            await client.list_tools()
        sides = (("direct", direct, direct_times), ("gateway", gateway, gateway_times), ("bare", bare, bare_times))
        for i in range(warmup + calls):
            for side, client, sink in sides:
                start = time.perf_counter()
                result = await client.call_tool("get_current_time", ARGS)
                elapsed = time.perf_counter() - start
                if result.is_error:
                    raise RuntimeError(f"benchmark call failed: {result.content}")
                if i >= warmup:
                    sink.append(elapsed)
                last[side] = result
        checks = (await _check_us(gateway, last["gateway"]), await _check_us(direct, last["direct"]))
    return direct_times, gateway_times, bare_times, checks


async def _check_us(client: Client, result: Any, n: int = 2000) -> float:
    """µs the SDK client spends checking one result against the tool's `outputSchema` (inside `call_tool`)."""
    for _ in range(n // 10):
        await client.session.validate_tool_result("get_current_time", result)
    start = time.perf_counter()
    for _ in range(n):
        await client.session.validate_tool_result("get_current_time", result)
    return (time.perf_counter() - start) / n * 1e6


async def _measure_drift(calls: int, warmup: int) -> tuple[dict[str, list[float]], float, float, int]:
    """Per-call times by guard mode, the guard alone and an empty coroutine (µs), and the re-lists made."""
    from toolproof.mcp import Gateway, GatewayConfig, Upstream

    up = Upstream(name="time", command=tuple(UPSTREAM), cwd=str(ROOT), trusted=True)
    times: dict[str, list[float]] = {"off": [], "on": [], "off2": [], "every": []}
    async with Gateway(GatewayConfig(upstreams=(up,)), store="memory://") as gw:
        (watch,) = gw.watches
        conn = watch.connection
        interval = watch.recheck_s
        listings = 0
        # Two phases, each alternating with the guard off: the default interval (whose re-lists are then
        # counted and included), then a re-list before every call.
        for phase in ((("off", None, interval), ("on", watch, interval)),
                      (("off2", None, 0.0), ("every", watch, 0.0))):
            for i in range(warmup + calls):
                for mode, guard, recheck in phase:
                    conn.guard, watch.recheck_s = guard, recheck
                    before = watch.listings
                    start = time.perf_counter()
                    envelope = await gw.runner.call("get_current_time", ARGS)
                    elapsed = time.perf_counter() - start
                    if not envelope.ok:
                        raise RuntimeError(f"benchmark call failed: {envelope.error}")
                    if i >= warmup:
                        times[mode].append(elapsed)
                        listings += (watch.listings - before) if mode == "on" else 0
        conn.guard, watch.recheck_s = watch, interval

        async def nothing(name: str) -> None:
            return None

        async def loop(fn: Any, n: int) -> float:
            start = time.perf_counter()
            for _ in range(n):
                await fn("get_current_time")
            return (time.perf_counter() - start) / n * 1e6

        n = 20_000 if calls < 100 else 100_000
        guard_us = statistics.median([await loop(conn.check_call, n) for _ in range(5)])
        empty_us = statistics.median([await loop(nothing, n) for _ in range(5)])
    return times, guard_us, empty_us, listings


def _drift_rows(quick: bool) -> list[dict[str, Any]]:
    calls, warmup = (60, 10) if quick else (400, 40)
    times, guard_us, empty_us, listings = asyncio.run(_measure_drift(calls, warmup))
    rows = []
    for mode, base, label in (
        ("on", "off", f"drift check on (default interval; {listings} re-lists in {calls} calls)"),
        ("every", "off2", "drift check on, drift_recheck_s = 0 (re-list before every call)"),
    ):
        for stat, fn in (("mean", statistics.fmean), ("p50", statistics.median)):
            value, off = fn(times[mode]) * 1e6, fn(times[base]) * 1e6
            rows.append({"benchmark": "gateway", "case": f"in-process call, {label}, {stat} vs guard off",
                         "value": round(value, 1), "unit": "µs", "baseline": round(off, 1),
                         "ratio": round(value / off, 3)})
    rows.append({"benchmark": "gateway", "case": "pre-call drift check alone (fresh listing) vs empty coroutine",
                 "value": round(guard_us, 3), "unit": "µs", "baseline": round(empty_us, 3),
                 "ratio": round(guard_us / empty_us, 3) if empty_us else None})
    return rows


def _verdict(key: str, measured: float) -> str:
    target = next(t for t in TARGETS if t.key == key)
    return f"target {target.wanted}: {'met' if target.met(measured) else 'not met'}"


def run(quick: bool) -> list[dict[str, Any]]:
    calls, warmup = (60, 10) if quick else (400, 40)
    direct, gateway, bare, (envelope_check, upstream_check) = asyncio.run(_measure(calls, warmup))
    rows = _drift_rows(quick)
    for label, measured, baseline in (("gateway vs direct", gateway, direct),
                                      ("bare SDK pass-through proxy vs direct", bare, direct),
                                      ("gateway vs bare SDK pass-through proxy", gateway, bare)):
        for stat, q in (("p50", 0.5), ("p95", 0.95)):
            base = _percentile(baseline, q) * 1e6
            value = _percentile(measured, q) * 1e6
            row = {
                "benchmark": "gateway",
                "case": f"{label}, stdio, {stat}",
                "value": round(value, 1),
                "unit": "µs",
                "baseline": round(base, 1),
                "ratio": round(value / base, 3),
            }
            if measured is gateway and baseline is bare:  # toolproof's share over any SDK hop: the target
                row = {**targeted(row, f"gateway-{stat}", value / base), "note": _verdict(f"gateway-{stat}",
                                                                                         value / base)}
            rows.append(row)
    added = (statistics.median(gateway) - statistics.median(direct)) * 1e3
    sdk_added = (statistics.median(bare) - statistics.median(direct)) * 1e3
    rows.append({
        "benchmark": "gateway",
        "case": "added p50 per call over the direct call: the gateway (baseline: the SDK pass-through proxy's own)",
        "value": round(added, 3),
        "unit": "ms",
        "baseline": round(sdk_added, 3),
        "ratio": round(added / sdk_added, 3) if sdk_added > 0 else None,
    })
    rows.append({
        "benchmark": "gateway",
        "case": "SDK client's outputSchema check of one result: the envelope's schema vs the upstream's own",
        "value": round(envelope_check, 1),
        "unit": "µs",
        "baseline": round(upstream_check, 1),
        "ratio": round(envelope_check / upstream_check, 3) if upstream_check else None,
    })
    return rows


if __name__ == "__main__":
    from benchmarks._harness import print_rows, target_summary

    found = run("--quick" in sys.argv)
    print_rows("gateway vs direct MCP stdio call (same upstream, same run)", found)
    for line in target_summary(found):
        if line["measured"] is not None:
            print(f"target: {line['target']}: {line['measured']:.3f}{line['unit']} (wanted {line['wanted']}): "
                  f"{line['verdict']}")
