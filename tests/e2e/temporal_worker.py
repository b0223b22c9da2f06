"""A Temporal worker process for the durable-engine tests: toolproof's activities beside a plain one.

    python temporal_worker.py MODE ADDRESS TASK_QUEUE STORE_URL EFFECTS_PATH READY_DIR

Both kinds of activity write one row per effect into EFFECTS_PATH (a SQLite table `effects`), so the test
counts effects from the outside. MODE `crash`: every activity stops after its effect and before it completes
(toolproof's after the journal recorded it; an order id starting `inhandler` inside the handler, before the
journal knows; the plain one after its row), writes READY_DIR/<order id>, and hangs, for the parent to
SIGKILL it. MODE `chaos`: the same points each pause a random 0.1-0.5 s instead (the parent kills
a worker while READY_DIR/window-<pid>-<order> says it is inside one). MODE `serve`: an ordinary worker,
until it is terminated.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import toolproof
    from toolproof.contract._envelope import Envelope
    from toolproof.integrations.temporal import NON_RETRYABLE_TYPES, activities, call_tool
    from toolproof.journal._journal import Journal
    from toolproof.stores._intent import Intent
    from toolproof.stores._steps import Io, IoSteps

#: Fast retries for the tests: the kill is noticed at start_to_close (2 s), the retry follows at once.
FAST = RetryPolicy(initial_interval=timedelta(seconds=0.2), backoff_coefficient=2.0,
                   maximum_interval=timedelta(seconds=1), maximum_attempts=8,
                   non_retryable_error_types=list(NON_RETRYABLE_TYPES))
TIMEOUT = timedelta(seconds=2)
#: For the class-mapping tests: three attempts at most, 0.1 s apart unless the envelope says otherwise.
THREE = RetryPolicy(initial_interval=timedelta(seconds=0.1), backoff_coefficient=1.0, maximum_attempts=3,
                    non_retryable_error_types=list(NON_RETRYABLE_TYPES))


@workflow.defn(name="ToolWorkflow")
class ToolWorkflow:
    """One tool call through toolproof's activities."""

    @workflow.run
    async def run(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await call_tool(tool, arguments, principal="buyer-7", start_to_close_timeout=TIMEOUT,
                               retry_policy=FAST, approval_timeout=timedelta(seconds=60))


@workflow.defn(name="ScriptWorkflow")
class ScriptWorkflow:
    """Several calls in one workflow, each `[tool, arguments, wait for approval]`: their envelopes, in order."""

    @workflow.run
    async def run(self, calls: list[list[Any]]) -> list[dict[str, Any]]:
        return [await call_tool(tool, arguments, principal="buyer-7", start_to_close_timeout=TIMEOUT,
                                retry_policy=THREE, approval_timeout=timedelta(seconds=30) if wait else None)
                for tool, arguments, wait in calls]


@workflow.defn(name="ContinuingWorkflow")
class ContinuingWorkflow:
    """Calls a tool, continues as new (a new run id, activity ids from 1 again), calls it again: the second."""

    @workflow.run
    async def run(self, tool: str, arguments: dict[str, Any], continued: bool) -> dict[str, Any]:
        envelope = await call_tool(tool, arguments, principal="buyer-7", start_to_close_timeout=TIMEOUT,
                                   retry_policy=THREE)
        if not continued:
            workflow.continue_as_new(args=[tool, arguments, True])
        return envelope


@workflow.defn(name="PlainWorkflow")
class PlainWorkflow:
    """The baseline: the same write as a plain activity, as Temporal's docs write one."""

    @workflow.run
    async def run(self, order_id: str) -> int:
        result: int = await workflow.execute_activity("plain_record_payment", order_id,
                                                      start_to_close_timeout=TIMEOUT, retry_policy=FAST)
        return result


class _Effects:
    """The external system: one row per effect, and the crash switch."""

    def __init__(self, path: str, ready_dir: str, mode: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        self.ready, self.mode = Path(ready_dir), mode
        self.crash = mode in ("crash", "chaos")

    def insert(self, kind: str, order_id: str) -> int:
        cur = self.db.execute("INSERT INTO effects (kind, order_id, pid) VALUES (?, ?, ?)",
                              (kind, order_id, os.getpid()))
        return int(cur.lastrowid or 0)

    async def hang(self, order_id: str) -> None:
        """In crash mode: say so, then wait for the SIGKILL; in chaos mode, a random pause (a window to kill in)."""
        if self.mode == "chaos":  # READY_DIR/window-<pid> exists while an effect awaits its completion
            window = self.ready / f"window-{os.getpid()}-{order_id}"
            window.write_text(order_id)
            await asyncio.sleep(random.uniform(0.1, 0.5))
            window.unlink(missing_ok=True)
        elif self.mode == "crash":
            (self.ready / order_id).write_text(str(os.getpid()))
            await asyncio.sleep(3600)


class _HangingJournal(Journal):
    """Crash mode: the write is recorded, then the worker dies before the activity completes. The journal's
    settle is steps (`recording`), so the pause is a step too: an `Io` whose async form is awaited."""

    effects: _Effects

    def recording(self, intent: Intent, tool: toolproof.Tool, envelope: Envelope, arguments: Any = None,
                  **settle: Any) -> IoSteps[Envelope]:
        recorded = yield from super().recording(intent, tool, envelope, arguments, **settle)
        order = str((arguments or {}).get("order_id", ""))
        if self.effects.mode == "chaos" or not order.startswith("inhandler"):
            if self.effects.mode == "chaos":  # READY_DIR/window-<pid> exists while an effect awaits completion
                window = self.effects.ready / f"window-{os.getpid()}-{order}"
                window.write_text(order)
                yield Io(time.sleep, asyncio.sleep, (random.uniform(0.1, 0.5),))
                window.unlink(missing_ok=True)
            elif self.effects.mode == "crash":
                (self.effects.ready / order).write_text(str(os.getpid()))
                yield Io(time.sleep, asyncio.sleep, (3600,))
        return recorded


def build(store_url: str, effects: _Effects) -> tuple[toolproof.Runner, list[Any]]:
    @toolproof.tool(effect="write")
    async def record_payment(order_id: str, amount_rs: int) -> dict[str, Any]:
        """Record one payment (no unique key at the payment service: a second call pays twice).

        Args:
            order_id: The order paid for.
            amount_rs: Amount in rupees.
        """
        row = effects.insert("payment", order_id)
        if order_id.startswith("inhandler") or effects.mode == "chaos":
            await effects.hang(order_id)
        return {"payment_id": row, "order_id": order_id, "amount_rs": amount_rs}

    @toolproof.tool(effect="write", approval="always")
    async def refund(order_id: str, amount_rs: int) -> dict[str, Any]:
        """Refund an order (a person approves every refund).

        Args:
            order_id: The order refunded.
            amount_rs: Amount in rupees.
        """
        return {"refund_id": effects.insert("refund", order_id), "order_id": order_id, "amount_rs": amount_rs}

    @activity.defn(name="plain_record_payment")
    async def plain_record_payment(order_id: str) -> int:
        row = effects.insert("plain", order_id)
        await effects.hang(order_id)
        return row

    runner = toolproof.Runner(toolproof.Toolset([record_payment, refund]), store=store_url, retry=None)
    journal = _HangingJournal(runner.store, lease_s=3.0, wait_s=0.5) if effects.crash else Journal(
        runner.store, lease_s=3.0, wait_s=0.5)
    journal.effects = effects  # type: ignore[attr-defined]
    runner.journal = journal
    return runner, [*activities(runner, approval_poll_s=0.1), plain_record_payment]


async def main(mode: str, address: str, queue: str, store_url: str, effects_path: str, ready_dir: str) -> None:
    effects = _Effects(effects_path, ready_dir, mode)
    _runner, acts = build(store_url, effects)
    client = await Client.connect(address)
    # A killed worker's cached workflows move to a fresh one after the sticky timeout: 1 s, not the 5 s default.
    worker = Worker(client, task_queue=queue, workflows=[ToolWorkflow, PlainWorkflow], activities=acts,
                    sticky_queue_schedule_to_start_timeout=timedelta(seconds=1))
    (Path(ready_dir) / f"worker-{os.getpid()}").write_text(mode)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
