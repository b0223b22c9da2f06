"""DBOS: toolproof's calls as DBOS steps inside DBOS workflows (`toolproof[dbos]`).

    call_tool = tool_step(runner)

    @DBOS.workflow()
    def order(item: dict) -> dict:
        return call_tool("place_order", item, principal="buyer-7")

DBOS checkpoints a step's output after the step returns; a process that dies in between (after the effect,
before the checkpoint) re-runs the step when the workflow is recovered on restart: at least once, like every
engine. The step's conversation is the workflow (`dbos:<workflow id>`), the same on every recovery and every
process, so the re-run finds the write's journal entry and replays its first result (or, when the process
died inside the handler, outlasts the dead claim's lease and answers `outcome_unknown` with the key); it is
never dispatched twice. The step id goes to `CallContext.metadata` (the audit trail), never into the key;
`DBOS.fork_workflow` makes a new workflow id, so a new conversation (pass `conversation_id=` to keep one).

Retries: the step never raises for a tool's failure, it returns the envelope, so DBOS's own step retries
(off by default, and without a per-error delay) never repeat a write. The `Runner` inside the step retries
what toolproof deems safe, Retry-After first, as it does anywhere. The journal lives in the runner's store
(any URL: the same PostgreSQL server as DBOS's system database, in toolproof's own tables), not in DBOS's
checkpoint: the checkpoint is written only after the step returns, which is exactly the gap the journal
closes, so it cannot be the journal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dbos import DBOS

from ..contract._context import CallContext
from ..contract._envelope import Envelope
from ..contract._errors import ErrorClass

if TYPE_CHECKING:
    from ..pipeline._runner import Runner

__all__ = ["conversation_of", "step_context", "tool_step"]


def conversation_of(workflow_id: str) -> str:
    """The conversation of a DBOS workflow's tool calls: the same on every recovery of it."""
    return f"dbos:{workflow_id}"


def step_context(principal: str | None = None, *, occurrence: int = 0,
                 conversation_id: str | None = None) -> CallContext:
    """The `CallContext` of a tool call made in the current DBOS step (outside a workflow: no conversation)."""
    workflow_id, step = DBOS.workflow_id, DBOS.step_id
    conversation = conversation_id or (conversation_of(workflow_id) if workflow_id else None)
    metadata = {"dbos_workflow_id": workflow_id, "dbos_step_id": step} if workflow_id else {}
    # No run_id: a workflow outlives a run budget's wall clock (and its calls are spread over recoveries).
    return CallContext(conversation_id=conversation, principal=principal, occurrence=occurrence, metadata=metadata)


def _in_flight(envelope: Envelope) -> bool:
    """Another attempt holds this write's claim: on a recovery, usually the process that died holding it."""
    error = envelope.error
    return error is not None and error.error_class is ErrorClass.CONFLICT and error.code == "IN_FLIGHT"


def _outlast_claim(runner: Runner, tool: str, arguments: Any, context: CallContext, envelope: Envelope,
                   poll_s: float = 0.25) -> Envelope:
    """Call again until the claim settles (replayed) or its lease runs out (`outcome_unknown`), at most one
    lease: a recovered step must not end on "still running" when what held it was the process that died."""
    deadline = time.monotonic() + runner.journal.lease_for(runner.toolset.get(tool))
    while _in_flight(envelope) and time.monotonic() < deadline:
        time.sleep(poll_s)
        envelope = runner.call_sync(tool, arguments, context=context)
    return envelope


def tool_step(runner: Runner, *, name: str = "toolproof.call_tool") -> Callable[..., dict[str, Any]]:
    """A DBOS step that calls one of the runner's tools and returns its envelope as a dict.

    `name` must be stable across deploys (DBOS matches recovered steps by it) and unique per runner.
    The step's arguments are code's: the tool, the model's raw arguments, and `principal` / `occurrence` /
    `conversation_id` (a conversation wider than the workflow) from the workflow, never from the model.
    """

    def call_tool(tool: str, arguments: Any = None, *, principal: str | None = None, occurrence: int = 0,
                  conversation_id: str | None = None) -> dict[str, Any]:
        context = step_context(principal, occurrence=occurrence, conversation_id=conversation_id)
        envelope = runner.call_sync(tool, arguments, context=context)
        if _in_flight(envelope):
            envelope = _outlast_claim(runner, tool, arguments, context, envelope)
        return envelope.to_dict()

    call_tool.__qualname__ = call_tool.__name__ = name.replace(".", "_")
    step: Callable[..., dict[str, Any]] = DBOS.step(name=name)(call_tool)
    return step
