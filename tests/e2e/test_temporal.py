"""toolproof inside Temporal, with the real parts: a dev server started by the CLI on free ports, worker
processes, a worker SIGKILLed after a write's effect and before its activity completes, the retry on a fresh
worker. Effects are rows in a SQLite table, counted from the outside; the plain activity beside it is the
baseline that shows the duplicate Temporal's at-least-once retry makes without toolproof.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

import toolproof
from tests.temporal_support import temporal_server
from toolproof.approvals import approve, list_requests
from toolproof.contract._envelope import Envelope
from toolproof.stores import open_store

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("temporal_worker.py")


@pytest.fixture(scope="module")
def temporal_address() -> Iterator[str]:
    with temporal_server() as address:
        yield address


class Setup:
    """A task queue of its own, the journal's SQLite store, the effects table, the workers started."""

    def __init__(self, address: str, tmp: Path) -> None:
        self.address, self.queue = address, f"q-{uuid.uuid4().hex[:8]}"
        self.store_url = f"sqlite:///{tmp / 'journal.sqlite3'}"
        self.effects, self.ready = tmp / "effects.sqlite3", tmp / "ready"
        self.ready.mkdir()
        with sqlite3.connect(self.effects) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE effects (id INTEGER PRIMARY KEY, kind TEXT, order_id TEXT, pid INTEGER)")
        self.procs: list[subprocess.Popen[str]] = []

    def worker(self, mode: str) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        proc = subprocess.Popen([sys.executable, str(WORKER), mode, self.address, self.queue, self.store_url,
                                 str(self.effects), str(self.ready)], env=env, cwd=REPO_ROOT,
                                stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        return proc

    def wait_ready(self, names: list[str], proc: subprocess.Popen[str], timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not all((self.ready / n).exists() for n in names):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"not ready: {[n for n in names if not (self.ready / n).exists()]}"
            time.sleep(0.02)

    def rows(self, kind: str, order_id: str) -> int:
        with sqlite3.connect(self.effects) as db:
            return int(db.execute("SELECT COUNT(*) FROM effects WHERE kind = ? AND order_id = ?",
                                  (kind, order_id)).fetchone()[0])

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
            proc.communicate(timeout=30)


@pytest.fixture
def setup(temporal_address: str, tmp_path: Path) -> Iterator[Setup]:
    made = Setup(temporal_address, tmp_path)
    try:
        yield made
    finally:
        made.close()


async def _approve_when_asked(store_url: str, timeout_s: float = 60) -> str:
    """The operator: approves the first pending request, as `toolproof approvals approve` does."""
    store = open_store(store_url)
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            pending = list_requests(store)
            if pending:
                approve(store, pending[0].id, by="ops@example.com")
                return pending[0].id
            await asyncio.sleep(0.05)
        raise AssertionError("no approval request appeared")
    finally:
        store.close()


async def test_a_killed_worker_retried_elsewhere_makes_one_effect(setup: Setup) -> None:
    client = await Client.connect(setup.address)
    paid, inhandler, refunded, plain = "ord-paid", "inhandler-1", "ord-refund", "ord-plain"
    started = time.monotonic()
    crashing = setup.worker("crash")
    handles = {
        paid: await client.start_workflow("ToolWorkflow", args=["record_payment", {"order_id": paid, "amount_rs": 900}],
                                          id=f"wf-{paid}-{setup.queue}", task_queue=setup.queue),
        inhandler: await client.start_workflow(
            "ToolWorkflow", args=["record_payment", {"order_id": inhandler, "amount_rs": 50}],
            id=f"wf-{inhandler}-{setup.queue}", task_queue=setup.queue),
        refunded: await client.start_workflow("ToolWorkflow", args=["refund", {"order_id": refunded, "amount_rs": 300}],
                                              id=f"wf-{refunded}-{setup.queue}", task_queue=setup.queue),
        plain: await client.start_workflow("PlainWorkflow", plain, id=f"wf-{plain}-{setup.queue}",
                                           task_queue=setup.queue),
    }
    approval_id = await _approve_when_asked(setup.store_url)
    await asyncio.to_thread(setup.wait_ready, [paid, inhandler, refunded, plain], crashing)
    os.kill(crashing.pid, signal.SIGKILL)  # every effect is done; no activity has completed
    crashing.communicate(timeout=10)
    killed_at = time.monotonic()
    fresh = setup.worker("serve")

    results: dict[str, Any] = {k: await asyncio.wait_for(h.result(), timeout=60) for k, h in handles.items()}
    print(f"\ntemporal kill: {time.monotonic() - started:.1f} s in all, {time.monotonic() - killed_at:.1f} s after "
          f"the kill; rows: payment {setup.rows('payment', paid)}, in-handler {setup.rows('payment', inhandler)}, "
          f"refund {setup.rows('refund', refunded)}, plain baseline {setup.rows('plain', plain)}")

    # The baseline: Temporal's retry ran the plain write again on the fresh worker.
    assert setup.rows("plain", plain) == 2
    # toolproof: the write recorded before the kill is replayed, with the first result.
    assert setup.rows("payment", paid) == 1
    env = Envelope.from_dict(results[paid])
    assert env.ok and env.meta.replayed and env.result["order_id"] == paid
    with sqlite3.connect(setup.effects) as db:
        first_pid = db.execute("SELECT pid FROM effects WHERE order_id = ?", (paid,)).fetchone()[0]
    assert first_pid == crashing.pid and fresh.poll() is None
    # Killed inside the handler, before the journal knew: nothing can tell, so outcome_unknown with the key.
    assert setup.rows("payment", inhandler) == 1
    unknown = Envelope.from_dict(results[inhandler])
    assert unknown.error is not None and unknown.error.error_class.value == "outcome_unknown"
    assert unknown.error.idempotency_key is not None and unknown.error.idempotency_key.startswith("tp1_")
    # The approved refund: approved once, run once, replayed after the kill (and the workflow's replay).
    assert setup.rows("refund", refunded) == 1
    refund = Envelope.from_dict(results[refunded])
    assert refund.ok and refund.meta.replayed and refund.result["order_id"] == refunded
    assert approval_id


class _Counted:
    """Tools whose calls are counted (and timed) by the test: what Temporal attempted, seen from the tool."""

    def __init__(self, effects: Path) -> None:
        self.calls: dict[str, list[float]] = {}
        self.effects = effects

    def toolset(self) -> toolproof.Toolset:
        calls = self.calls
        effects = self.effects

        def seen(name: str) -> int:
            calls.setdefault(name, []).append(time.monotonic())
            return len(calls[name])

        @toolproof.tool(effect="read")
        def credit_check(buyer: str) -> dict[str, Any]:
            """Check a buyer's credit (this desk may not).

            Args:
                buyer: The buyer.
            """
            seen("credit_check")
            raise toolproof.PermissionDenied("This desk may not check credit.", code="DESK_NOT_ALLOWED")

        @toolproof.tool(effect="read")
        def quote(crop: str) -> dict[str, Any]:
            """Today's price of a crop (the market's API limits its callers).

            Args:
                crop: The crop.
            """
            if seen("quote") == 1:
                raise toolproof.RateLimited("The market's API is busy.", retry_after_s=1.0)
            return {"crop": crop, "price_rs_per_kg": 71}

        @toolproof.tool(effect="read")
        def weather(district: str) -> dict[str, Any]:
            """The forecast for a district (its service is down today).

            Args:
                district: The district.
            """
            seen("weather")
            raise toolproof.TransientUpstream("The forecast service answered 503.")

        @toolproof.tool(effect="write", approval="always")
        def refund(order_id: str, amount_rs: int) -> dict[str, Any]:
            """Refund an order (a person approves every refund).

            Args:
                order_id: The order refunded.
                amount_rs: Amount in rupees.
            """
            seen("refund")
            with sqlite3.connect(effects) as db:
                db.execute("INSERT INTO effects (kind, order_id, pid) VALUES ('refund', ?, ?)", (order_id, os.getpid()))
            return {"order_id": order_id, "amount_rs": amount_rs}

        @toolproof.tool(effect="write")
        def ship(order_id: str) -> dict[str, Any]:
            """Ship an order (the carrier has no request key: a second call ships twice).

            Args:
                order_id: The order shipped.
            """
            seen("ship")
            return {"order_id": order_id, "shipment": len(calls["ship"])}

        return toolproof.Toolset([credit_check, quote, weather, refund, ship])


@pytest.fixture
async def in_process(setup: Setup) -> Any:
    """A worker in this process on the setup's queue, with the counted tools; its client."""
    from temporalio.worker import Worker

    from tests.e2e.temporal_worker import ContinuingWorkflow, ScriptWorkflow
    from toolproof.integrations.temporal import activities

    counted = _Counted(setup.effects)
    runner = toolproof.Runner(counted.toolset(), store=setup.store_url, retry=None)
    client = await Client.connect(setup.address)
    worker = Worker(client, task_queue=setup.queue, workflows=[ScriptWorkflow, ContinuingWorkflow],
                    activities=activities(runner, approval_poll_s=0.05))
    async with worker:
        yield client, counted
    await runner.aclose()


async def test_classes_map_onto_temporal_retries(setup: Setup, in_process: Any) -> None:
    client, counted = in_process
    calls = [["credit_check", {"buyer": "b-1"}, False], ["quote", {"crop": "groundnut"}, False],
             ["weather", {"district": "Anantapur"}, False]]
    denied, quoted, down = await client.execute_workflow("ScriptWorkflow", calls, id=f"wf-classes-{setup.queue}",
                                                         task_queue=setup.queue)
    # Not retryable: attempted once, the envelope intact in the workflow.
    assert len(counted.calls["credit_check"]) == 1
    env = Envelope.from_dict(denied)
    assert env.error is not None and (env.error.error_class.value, env.error.code) == (
        "permission_denied", "DESK_NOT_ALLOWED")
    # rate_limited: retried by Temporal after Retry-After (1 s), not after the policy's 0.1 s.
    first, second = counted.calls["quote"]
    print(f"\nRetry-After 1.0 s: Temporal's next attempt came {second - first:.2f} s later")
    assert second - first >= 1.0
    assert Envelope.from_dict(quoted).ok
    # transient_upstream: retried, never forever: the policy's three attempts, then the envelope.
    assert len(counted.calls["weather"]) == 3
    assert Envelope.from_dict(down).error_class is not None and down["error"]["class"] == "transient_upstream"


async def test_an_approval_is_bound_to_its_arguments_and_consumed_once(setup: Setup, in_process: Any) -> None:
    client, counted = in_process
    calls = [["refund", {"order_id": "o-9", "amount_rs": 300}, True],
             ["refund", {"order_id": "o-9", "amount_rs": 300}, True],
             ["refund", {"order_id": "o-9", "amount_rs": 3000}, False]]
    handle = await client.start_workflow("ScriptWorkflow", calls, id=f"wf-approval-{setup.queue}",
                                         task_queue=setup.queue)
    approved = await _approve_when_asked(setup.store_url)
    ran, again, changed = await asyncio.wait_for(handle.result(), timeout=60)
    assert Envelope.from_dict(ran).ok and not ran["meta"].get("replayed")
    assert Envelope.from_dict(again).ok and again["meta"]["replayed"]  # the same call again: not run again
    assert setup.rows("refund", "o-9") == 1 and len(counted.calls["refund"]) == 1
    # Other arguments: a new request, not the approved one; nothing ran.
    assert changed["error"]["code"] == "APPROVAL_REQUIRED" and changed["meta"]["approval_id"] != approved


async def _in_a_window(setup: Setup, workers: list[subprocess.Popen[str]], kind: str, timeout_s: float = 5.0) -> Any:
    """A worker that is between an effect of `kind` ("tp" or "plain") and its activity's completion right now
    (its window file), if any."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for proc in workers:
            if any(setup.ready.glob(f"window-{proc.pid}-{kind}-*")):
                return proc
        await asyncio.sleep(0.01)
    return None


async def test_random_worker_kills_make_no_duplicate_and_lose_nothing(setup: Setup) -> None:
    """N orders through toolproof and N through the plain activity while workers are SIGKILLed at random moments
    inside the window between an effect and its activity's completion."""
    import random

    rng, n, kills = random.Random(7), 12, 0
    client = await Client.connect(setup.address)
    workers = [setup.worker("chaos"), setup.worker("chaos")]
    handles: dict[str, Any] = {}
    started = time.monotonic()
    for i in range(n):
        tp, plain = f"tp-{i}", f"plain-{i}"
        handles[tp] = await client.start_workflow(
            "ToolWorkflow", args=["record_payment", {"order_id": tp, "amount_rs": 100 + i}],
            id=f"wf-{tp}-{setup.queue}", task_queue=setup.queue)
        handles[plain] = await client.start_workflow("PlainWorkflow", plain, id=f"wf-{plain}-{setup.queue}",
                                                     task_queue=setup.queue)
        await asyncio.sleep(rng.uniform(0.05, 0.25))
        kind = ("tp", "plain")[kills % 2]  # kill inside toolproof's windows and the baseline's in turn
        if i % 3 == 2 and (victim := await _in_a_window(setup, workers, kind)) is not None:
            workers.remove(victim)
            os.kill(victim.pid, signal.SIGKILL)  # between an effect and its activity's completion
            kills += 1
            workers.append(setup.worker("chaos"))
    results = {k: await asyncio.wait_for(h.result(), timeout=90) for k, h in handles.items()}

    tp_rows = {i: setup.rows("payment", f"tp-{i}") for i in range(n)}
    plain_rows = {i: setup.rows("plain", f"plain-{i}") for i in range(n)}
    envelopes = [Envelope.from_dict(results[f"tp-{i}"]) for i in range(n)]
    done = sum(e.ok for e in envelopes)
    replayed = sum(e.ok and e.meta.replayed for e in envelopes)
    unknown = [e for e in envelopes if not e.ok]
    duplicates = sum(r > 1 for r in tp_rows.values())
    lost = sum(e.ok and tp_rows[i] == 0 for i, e in enumerate(envelopes))
    print(f"\nchaos: {n} orders each way, {kills} workers SIGKILLed, {time.monotonic() - started:.1f} s; toolproof: "
          f"{done} done ({replayed} replayed after a kill), {len(unknown)} outcome_unknown, {duplicates} duplicates, "
          f"{lost} lost; plain: {sum(r > 1 for r in plain_rows.values())} duplicated, "
          f"{sum(plain_rows.values())} effects for {n} orders")
    assert duplicates == 0 and lost == 0
    for env in unknown:  # a kill inside the handler: nothing can tell, so the key for a person, never a resend
        assert env.error is not None and env.error.error_class.value == "outcome_unknown"
        assert env.error.idempotency_key is not None
    assert done + len(unknown) == n and kills >= 2
    assert replayed + len(unknown) >= 1  # a kill did land inside a toolproof write


async def test_continue_as_new_keeps_the_conversation(setup: Setup, in_process: Any) -> None:
    client, counted = in_process
    handle = await client.start_workflow("ContinuingWorkflow", args=["ship", {"order_id": "o-5"}, False],
                                         id=f"wf-continue-{setup.queue}", task_queue=setup.queue)
    second = await asyncio.wait_for(handle.result(), timeout=60)
    latest = await client.get_workflow_handle(handle.id).describe()
    assert latest.run_id != handle.first_execution_run_id  # it did continue as new
    assert len(counted.calls["ship"]) == 1  # the new run's identical write was not sent again
    assert second["ok"] and second["meta"]["replayed"] and second["result"]["shipment"] == 1


async def test_pydantic_ai_durable_agent_runs_toolproofs_activities(setup: Setup) -> None:
    import json

    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin
    from temporalio.worker import Worker

    from tests.e2e import pai_temporal_app as app
    from tests.e2e.pai_temporal_workflow import DeskAgentWorkflow
    from toolproof.integrations.temporal import activities

    app.SHIPPED.clear()
    client = await Client.connect(setup.address, plugins=[PydanticAIPlugin()])
    async with Worker(client, task_queue=setup.queue, workflows=[DeskAgentWorkflow],
                      activities=activities(app.runner), plugins=[AgentPlugin(app.agent)]):
        handle = await client.start_workflow("DeskAgentWorkflow", "ship order o-1", id=f"wf-agent-{setup.queue}",
                                             task_queue=setup.queue)
        messages = json.loads(await asyncio.wait_for(handle.result(), timeout=60))
        scheduled = [e.activity_task_scheduled_event_attributes.activity_type.name
                     async for e in handle.fetch_history_events()
                     if e.HasField("activity_task_scheduled_event_attributes")]
    returns = [json.loads(p["content"]) if isinstance(p["content"], str) else p["content"]
               for m in messages for p in m["parts"] if p.get("part_kind") == "tool-return"]
    assert scheduled.count("ship") == 2  # each tool call ran as toolproof's activity for the tool
    assert app.SHIPPED == ["o-1"]  # the model's second identical call was replayed, not shipped again
    assert [r["ok"] for r in returns] == [True, True] and returns[1]["meta"]["replayed"]
    assert messages[-1]["parts"][0]["content"] == "shipped"
