"""The libraries that sell once-only tool calls, each used as its README shows, around the same plain
function, called by the plain loop (`simple_loop`) in one conversation per scenario:

- call4agents: `c4a.init(file)`, `@c4a.effect`, each call inside `with c4a.run(conversation)`.
- agent-once (import `once`): `Once(file)`, `@once.tool`, each call inside `with once.scope(conversation)`.
- agent-outbox: `ToolExecutor(OutboxStore(file)).run("place_order", fn, args, conversation)`; an
  `Execution` that is not ok is an error reply.
- deduplex: `@guard(key=derive_key(conversation, *args, namespace="place_order"), guard_instance=Guard())`.
- idemkit: `@idempotent_sync(backend=InMemoryBackend(), config=MethodConfig(scope=conversation))`.
- agent-runtime-governance: `Runtime().tool(execution_mode=ExecutionMode.IDEMPOTENT)`, each call with
  `_governance=InvocationOptions(conversation_id=..., idempotency_key=conversation + arguments)` (the key it
  requires for an idempotent mutating tool).

None has a tool timeout of its own in this use; in the timeout scenario the caller stops waiting after 0.1 s
(the body runs on in its thread), as an agent loop's timeout does. An exception is the error reply.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.peers._common import TIMEOUT_S, Observation, OrderBook, Reply, Scenario, make_place_order, simple_loop

Call = Callable[[dict[str, Any]], Any]


class ExecutionNotOk(Exception):
    """agent-outbox's answer `Execution(ok=False)`, as the error reply the model reads."""


def _call4agents(fn: Any, conversation: str, tmp: Path) -> Call:
    import call4agents as c4a

    c4a.init(str(tmp / f"c4a-{conversation}.sqlite"))
    effect = c4a.effect(fn)

    def call(args: dict[str, Any]) -> Any:
        with c4a.run(conversation):
            return effect(**args)

    return call


def _agent_once(fn: Any, conversation: str, tmp: Path) -> Call:
    from once import Once

    once = Once(str(tmp / f"once-{conversation}.db"))
    tool = once.tool(fn)

    def call(args: dict[str, Any]) -> Any:
        with once.scope(conversation):
            return tool(**args)

    return call


def _agent_outbox(fn: Any, conversation: str, tmp: Path) -> Call:
    from agent_outbox import OutboxStore, ToolExecutor

    executor = ToolExecutor(OutboxStore(str(tmp / f"outbox-{conversation}.db")))

    def call(args: dict[str, Any]) -> Any:
        done = executor.run("place_order", fn, args, conversation)
        if not done.ok:
            raise ExecutionNotOk(f"Execution ok=False, replay={done.replay}: {done.error}")
        return done.result

    return call


def _deduplex(fn: Any, conversation: str, tmp: Path) -> Call:
    from deduplex import Guard, derive_key, guard

    def key(crop: Any, quantity_kg: Any, delivery_date: Any) -> str:
        return str(derive_key(conversation, crop, quantity_kg, delivery_date, namespace="place_order"))

    guarded = guard(key=key, guard_instance=Guard())(fn)
    return lambda args: guarded(**args)


def _idemkit(fn: Any, conversation: str, tmp: Path) -> Call:
    from idemkit import InMemoryBackend, MethodConfig
    from idemkit.adapters.ai import idempotent_sync

    guarded = idempotent_sync(backend=InMemoryBackend(),
                              config=MethodConfig(scope=lambda *a, **k: conversation))(fn)
    return lambda args: guarded(**args)


def _governance(fn: Any, conversation: str, tmp: Path) -> Call:
    from agent_runtime_governance import ExecutionMode, InvocationOptions, Runtime

    tool = Runtime().tool(execution_mode=ExecutionMode.IDEMPOTENT)(fn)

    def call(args: dict[str, Any]) -> Any:
        key = f"{conversation}:place_order:{json.dumps(args, sort_keys=True)}"
        return tool(**args, _governance=InvocationOptions(conversation_id=conversation, idempotency_key=key))

    return call


@dataclass(frozen=True)
class Library:
    """One library as a peers driver (NAME, DIST, available, run), like the driver modules."""

    NAME: str
    DIST: str
    module: str
    wrap: Callable[[Any, str, Path], Call]

    def available(self) -> bool:
        try:
            importlib.import_module(self.module)
        except ImportError:
            return False
        return True

    async def run(self, scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
        obs = Observation(self.NAME, scenario.key)
        call = self.wrap(make_place_order(book), f"conv-{scenario.key}", tmp)

        async def send(args: dict[str, Any]) -> Reply:
            try:
                running = asyncio.to_thread(call, args)
                result = await (asyncio.wait_for(running, TIMEOUT_S) if scenario.timeout else running)
            except Exception as exc:
                text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                return Reply.from_text("raised", text, error=True)
            return Reply.from_text("returned", json.dumps(result, default=str))

        await simple_loop(scenario, send, obs)
        return obs


call4agents = Library("call4agents", "call4agents", "call4agents", _call4agents)
agent_once = Library("agent-once", "agent-once", "once", _agent_once)
agent_outbox = Library("agent-outbox", "agent-outbox", "agent_outbox", _agent_outbox)
deduplex = Library("deduplex", "deduplex", "deduplex", _deduplex)
idemkit = Library("idemkit", "idemkit", "idemkit", _idemkit)
governance = Library("agent-runtime-governance", "agent-runtime-governance", "agent_runtime_governance", _governance)
bare = Library("the function alone", "-", "json", lambda fn, conversation, tmp: lambda args: fn(**args))
