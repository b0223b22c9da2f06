"""Running the scenarios: every write tool of a toolset, every scenario, through toolproof and/or bare, each
on its own conversation in a scratch store, each counted by its own ledger."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..catalog._toolset import Toolset
from ..contract._context import CallContext
from ..contract._tool import NOT_DONE, Tool
from ._arguments import arguments_for, changed
from ._callers import Caller, Reply, Through, caller
from ._instrument import Ledger, counting_method, instrument
from ._scenarios import SCENARIOS, TIMEOUT_S, Scenario

__all__ = ["DEFAULT_PRINCIPAL", "NOT_OBSERVABLE", "NO_CHANGE", "NotApplicable", "Row", "ask_verify", "run_chaos",
           "scratch_store", "write_tools"]

DEFAULT_PRINCIPAL: Final = "chaos-user"
NOT_OBSERVABLE: Final = "not observable (no verify hook)"
NO_EFFECT: Final = "it never took effect: if the call failed before its effect, give --args"
NO_CHANGE: Final = "every argument names the operation (an id or an operation key): other values are another operation"
#: The journal lease a killed worker's claim is given, so that the resend finds it lapsed, not live.
WORKER_LEASE_S: Final = 0.5
_WORKER_WAIT_S: Final = 60.0


@dataclass(frozen=True, slots=True)
class Row:
    """One tool in one scenario: effects per logical operation, what the caller was told, how it was counted."""

    tool: str
    scenario: str
    through: Through
    effects: int | None  # None: not observable
    entries: int | None  # entries into the function that returned without raising
    calls: int  # calls the caller sent
    calls_to_recover: int | None  # the calls sent until the first answer that was ok (None: none was)
    told: tuple[str, ...]
    counted: str
    replayed: bool = False
    note: str = ""
    #: `ok_did_nothing` only: True when the tool's verify found no effect (caught), False when it said done.
    caught: bool | None = None

    @property
    def double_effect(self) -> bool:
        return self.effects is not None and self.effects > 1

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "scenario", "tool": self.tool, "scenario": self.scenario, "through": self.through,
                "effects": self.effects, "double_effect": self.double_effect, "entries": self.entries,
                "calls": self.calls, "calls_to_recover": self.calls_to_recover, "told": list(self.told),
                "replayed": self.replayed, "counted": self.counted, "note": self.note, "caught": self.caught}


@dataclass
class _Stage:
    """What one scenario of one tool needs: the tool, its calls, where to count and store."""

    toolset_target: str | None
    tool: Tool
    arguments: dict[str, Any]
    through: Through
    store: str
    ledger: Ledger
    principal: str
    conversation: str = field(default_factory=lambda: f"chaos-{uuid.uuid4().hex[:12]}")

    def context(self, call_id: str | None = None) -> CallContext:
        return CallContext(conversation_id=self.conversation, principal=self.principal,
                           call_id=call_id or f"call-{uuid.uuid4().hex[:10]}")

    def sender(self, scenario: Scenario, *, timeout_s: float | None = None) -> Caller:
        on_tool = timeout_s if self.through == "toolproof" else None
        tool = instrument(self.tool, self.ledger, scenario.fault, timeout_s=on_tool)
        return caller(self.through, tool, self.store, timeout_s=timeout_s)


def write_tools(toolset: Toolset, names: Sequence[str] = ()) -> list[Tool]:
    """The tools chaos works on: every tool not declared read-only (or the ones named)."""
    if names:
        return [toolset.get(n) for n in names]
    return [t for t in toolset if t.effect != "read"]


@contextmanager
def scratch_store(store: str | None) -> Iterator[tuple[str, Path]]:
    """The store URL the runs use (a fresh SQLite file in a temporary folder unless one is named) and the
    folder for the ledgers; the folder is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="toolproof-chaos-") as tmp:
        folder = Path(tmp)
        yield store or f"sqlite:///{folder / 'scratch.sqlite3'}", folder


def run_chaos(
    toolset: Toolset,
    *,
    target: str | None = None,
    tools: Sequence[str] = (),
    arguments: Mapping[str, dict[str, Any]] | None = None,
    through: Sequence[Through] = ("toolproof",),
    scenarios: Sequence[Scenario] = SCENARIOS,
    store: str | None = None,
    principal: str = DEFAULT_PRINCIPAL,
) -> list[Row]:
    """Every scenario for every write tool. `target` (`MODULE:TOOLSET`) lets a worker process load the same
    toolset; without it the killed-worker scenario is not run."""
    given = arguments or {}
    rows: list[Row] = []
    with scratch_store(store) as (url, folder):
        for tool in write_tools(toolset, tools):
            args = arguments_for(tool.input_schema, tool.examples, given.get(tool.name))
            for how in through:
                for sc in scenarios:
                    ledger = Ledger(folder / f"{tool.name}-{sc.key}-{how}.jsonl")
                    stage = _Stage(target, tool, args, how, url, ledger, principal)
                    rows.append(_run(sc, stage))
    return rows


def _run(sc: Scenario, stage: _Stage) -> Row:
    if sc.needs_verify:
        if stage.tool.verify is None:
            return Row(stage.tool.name, sc.key, stage.through, None, None, 0, None, (), NOT_OBSERVABLE)
        return _did_nothing(sc, stage)
    if sc.key == "worker_killed" and stage.toolset_target is None:
        return Row(stage.tool.name, sc.key, stage.through, None, None, 0, None, (),
                   "not run", note="needs a MODULE:TOOLSET target a worker process can import")
    try:
        replies, note = _STAGINGS[sc.key](sc, stage)
    except NotApplicable as exc:
        return Row(stage.tool.name, sc.key, stage.through, None, None, 0, None, (), "not applicable", note=str(exc))
    ok = [i for i, r in enumerate(replies, 1) if r.ok]
    entries = stage.ledger.entries()
    if not entries:
        note = "; ".join(filter(None, [note, NO_EFFECT]))
    return Row(stage.tool.name, sc.key, stage.through, stage.ledger.effects(stage.tool), entries,
               len(replies), ok[0] if ok else None, tuple(r.told for r in replies), counting_method(stage.tool),
               any(r.replayed for r in replies), note)


def ask_verify(tool: Tool, arguments: dict[str, Any], context: CallContext) -> tuple[bool | None, str]:
    """What the tool's verify says of one call: True (the effect exists), False (`NOT_DONE`), None (it raised:
    cannot tell), and in words."""
    assert tool.verify is not None
    try:
        args, kwargs = tool.bind(tool.parse_arguments(arguments), context)
        value = tool.verify(*args, **kwargs)
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
    except Exception as exc:
        return None, f"verify could not tell: it raised {type(exc).__name__}: {exc}"
    if value is NOT_DONE:
        return False, "verify found no effect"
    return True, "verify says the effect exists"


async def _awaited(value: Any) -> Any:
    return await value


def _did_nothing(sc: Scenario, stage: _Stage) -> Row:
    """The body answers ok and does nothing; afterwards the tool's verify is asked, under the key the call ran
    with (toolproof's, else none: the function builds its own from the context), whether the effect exists."""
    sender = stage.sender(sc)
    ctx = stage.context()
    try:
        reply = sender.send(stage.arguments, ctx)
    finally:
        sender.close()
    name = getattr(stage.tool.verify, "__name__", "verify")
    counted = f"verify= hook {name}, asked after the call whether the effect exists"
    row = Row(stage.tool.name, sc.key, stage.through, None, stage.ledger.entries(), 1, 1 if reply.ok else None,
              (reply.told,), counted, reply.replayed)
    if not reply.ok:
        return dataclasses.replace(row, note="the answer shaped like the tool's output was not ok, so nothing was "
                                             "pretended")
    exists, evidence = ask_verify(stage.tool, stage.arguments, ctx.with_updates(idempotency_key=reply.key))
    if exists is None:
        return dataclasses.replace(row, note=evidence)
    verdict = "missed" if exists else "caught by verify"
    return dataclasses.replace(row, effects=int(exists), caught=not exists,
                               note=f"{verdict}: the caller was told {reply.told}; {evidence}")


class NotApplicable(Exception):
    """The scenario has no meaning for this tool (said in the row's note)."""


Staging = Callable[[Scenario, _Stage], tuple[list[Reply], str]]


def _resend_unless_ok(sc: Scenario, stage: _Stage, *, timeout_s: float | None = None) -> tuple[list[Reply], str]:
    """The caller sends, and sends the same call (same request id) once more unless the first answer was ok,
    whatever it was told (a stubborn agent: what the tool layer does with the resend is what is measured)."""
    sender = stage.sender(sc, timeout_s=timeout_s)
    ctx = stage.context()
    try:
        replies = [sender.send(stage.arguments, ctx)]
        if not replies[0].ok:
            replies.append(sender.send(stage.arguments, ctx))
    finally:
        sender.close()
    if timeout_s is not None:
        time.sleep(sc.fault.seconds)  # the first body finishes its run-on before the ledger is read
    return replies, ""


def _timeout(sc: Scenario, stage: _Stage) -> tuple[list[Reply], str]:
    return _resend_unless_ok(sc, stage, timeout_s=TIMEOUT_S)


def _racing(sc: Scenario, stage: _Stage) -> tuple[list[Reply], str]:
    sender = stage.sender(sc)
    start = threading.Barrier(2)
    replies: list[Reply | None] = [None, None]

    def send(i: int) -> None:
        ctx = stage.context()
        start.wait()
        replies[i] = sender.send(stage.arguments, ctx)

    workers = [threading.Thread(target=send, args=(i,), name=f"chaos-race-{i}") for i in (0, 1)]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        sender.close()
    return [r for r in replies if r is not None], ""


def _changed(sc: Scenario, stage: _Stage) -> tuple[list[Reply], str]:
    other = changed(stage.tool.input_schema, stage.arguments, stage.tool.operation_keys)
    if other is None:
        raise NotApplicable(NO_CHANGE)
    name, args = other
    sender = stage.sender(sc)
    try:
        replies = [sender.send(stage.arguments, stage.context())]
        replies.append(sender.send(args, stage.context()))
    finally:
        sender.close()
    return replies, f"changed {name}: {stage.arguments.get(name)!r} -> {args[name]!r}"


def _new_request_id(sc: Scenario, stage: _Stage) -> tuple[list[Reply], str]:
    sender = stage.sender(sc)
    try:
        first = sender.send(stage.arguments, stage.context())
        second = sender.send(stage.arguments, stage.context())  # a new request id, the same conversation
    finally:
        sender.close()
    return [Reply.lost(f"stream cut; the answer was {first.told}"), second], ""


def _worker_killed(sc: Scenario, stage: _Stage) -> tuple[list[Reply], str]:
    ctx = stage.context()
    spec = {"target": stage.toolset_target, "tool": stage.tool.name, "arguments": stage.arguments,
            "context": {"conversation_id": ctx.conversation_id, "principal": ctx.principal, "call_id": ctx.call_id},
            "through": stage.through, "store": stage.store, "ledger": str(stage.ledger.path),
            "lease_s": WORKER_LEASE_S if stage.through == "toolproof" else None}
    first = _spawn({**spec, "fault": sc.fault.kind, "seconds": sc.fault.seconds})
    deadline = time.monotonic() + _WORKER_WAIT_S
    while first.poll() is None and not stage.ledger.rows() and time.monotonic() < deadline:
        time.sleep(0.02)
    if first.poll() is not None:  # it ended on its own: the call failed before any effect
        out, err = first.communicate()
        return [_worker_reply(out, err)], "the first worker ended before its effect"
    os.kill(first.pid, signal.SIGKILL)
    first.communicate()
    if stage.through == "toolproof":
        time.sleep(WORKER_LEASE_S)  # the resend comes after the dead worker's lease
    second = _spawn({**spec, "fault": "none", "seconds": 0.0})
    out, err = second.communicate(timeout=_WORKER_WAIT_S)
    return [Reply.lost(f"worker {first.pid} killed with SIGKILL after the effect"), _worker_reply(out, err)], ""


def _spawn(spec: dict[str, Any]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), *sys.path])}
    return subprocess.Popen([sys.executable, "-m", "toolproof.chaos._worker", json.dumps(spec)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _worker_reply(out: str, err: str) -> Reply:
    lines = out.strip().splitlines()
    if not lines:
        last = (err.strip().splitlines() or ["no output"])[-1]
        return Reply(False, f"worker failed: {last}")
    return Reply.from_dict(json.loads(lines[-1]))


_STAGINGS: Final[dict[str, Staging]] = {
    "reply_lost": _resend_unless_ok,
    "timeout_after_commit": _timeout,
    "worker_killed": _worker_killed,
    "racing_resends": _racing,
    "rate_limited": _resend_unless_ok,
    "changed_arguments": _changed,
    "new_request_id": _new_request_id,
}
