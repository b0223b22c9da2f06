"""Temporal: a toolset's tools as activities, and the workflow side that calls them (`toolproof[temporal]`).

Worker:

    Worker(client, task_queue="desk", workflows=[Order], activities=activities(runner))

Workflow (import this module inside `workflow.unsafe.imports_passed_through()`, as for any activity module):

    envelope = await call_tool("place_order", {"crop": "groundnut", ...}, principal="buyer-7")

Temporal runs an activity at least once: a worker killed after the effect, or a completion lost on the way
back, and the activity runs again, on any worker. Inside the activity the `Runner` does what it always does;
the engine only says who is asking: the conversation is the workflow (`temporal:<namespace>/<workflow id>`),
stable across every attempt, every worker, continue-as-new and reset, so a retried write finds its journal
entry and replays the first result (or waits for the attempt still holding it, or answers
`outcome_unknown` with the key); it is never dispatched twice. The activity id, run id and attempt go to
`CallContext.metadata` (the audit trail), never into the key: a reset re-runs activities under new ids, and
the same write must still replay. A deliberate second identical write says so with `occurrence=1`. No
`run_id` is set: a workflow outlives a run budget's wall clock, and Temporal's retry policy is the budget.

Toolproof's classes map onto Temporal's retry model (`outcome`): a success, and an approval to wait for,
return the envelope; `rate_limited` / `transient_upstream` (and `conflict IN_FLIGHT`, another attempt still
holds the write) raise a retryable `ApplicationError` carrying the envelope and the delay (`retry_after_s`
wins over the policy's backoff); every other class raises a non-retryable one of type
`toolproof.<class>`, so Temporal attempts it once. `call_tool` turns the activity's final failure back into
the envelope, so the workflow (and the model) read it intact; `RETRY_POLICY` bounds every class's attempts.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from ..contract._context import CallContext
from ..contract._envelope import Envelope, Meta
from ..contract._errors import CLASS_SPECS, ErrorClass, OutcomeUnknown

if TYPE_CHECKING:
    from ..contract._tool import Tool
    from ..pipeline._runner import Runner

__all__ = ["APPROVAL_ACTIVITY", "IN_FLIGHT_TYPE", "NON_RETRYABLE_TYPES", "RETRY_POLICY", "ToolCall", "activities",
           "call_tool", "conversation_of", "envelope_of_failure", "failure_type", "outcome"]

#: The name of the activity that waits for a person's decision on an approval request.
APPROVAL_ACTIVITY: Final = "toolproof.await_approval"
_TYPE_PREFIX: Final = "toolproof."
#: The type of `conflict IN_FLIGHT` (another attempt still holds the write): retryable, so not `toolproof.conflict`,
#: which `non_retryable_error_types` names.
IN_FLIGHT_TYPE: Final = "toolproof.in_flight"


def failure_type(error_class: ErrorClass | str) -> str:
    """The `ApplicationError.type` of a class: `toolproof.<class>` (what `non_retryable_error_types` names)."""
    return _TYPE_PREFIX + ErrorClass(error_class).value


#: Every class toolproof would not retry, by its `ApplicationError.type`.
NON_RETRYABLE_TYPES: Final = tuple(failure_type(c) for c, spec in CLASS_SPECS.items() if not spec.retryable)
#: The default policy of `call_tool`: bounded attempts for every class, toolproof's non-retryable ones never.
RETRY_POLICY: Final = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                                  maximum_interval=timedelta(seconds=60), maximum_attempts=5,
                                  non_retryable_error_types=list(NON_RETRYABLE_TYPES))


@dataclass(frozen=True)
class ToolCall:
    """The input of a tool's activity: written by workflow code, never by the model (except `arguments`).

    `arguments`: the model's raw arguments (a JSON object, or its text); `principal`: the user the workflow
    acts for; `occurrence`: 1, 2, ... for a confirmed second identical write; `conversation_id`: a
    conversation wider than the workflow (a chat that spans workflows), else the workflow's own.
    """

    arguments: Any = None
    principal: str | None = None
    occurrence: int = 0
    conversation_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def conversation_of(namespace: str, workflow_id: str) -> str:
    """The conversation of a workflow's tool calls: the same for every attempt, run and reset of it."""
    return f"temporal:{namespace}/{workflow_id}"


def _conversation(info: activity.Info) -> str:
    """The workflow's conversation; an activity started on its own (no workflow) is its own conversation."""
    namespace = info.namespace
    if info.workflow_id:
        return conversation_of(namespace, info.workflow_id)
    return f"temporal:{namespace}/activity/{info.activity_id}"


def activities(runner: Runner, *, approval_poll_s: float = 0.5) -> list[Any]:
    """One activity per tool of the runner (named as the tool), plus `APPROVAL_ACTIVITY`, for a `Worker`."""
    made = [_tool_activity(runner, tool) for tool in runner.toolset]
    return [*made, _approval_activity(runner, approval_poll_s)]


def _tool_activity(runner: Runner, tool: Tool) -> Any:
    name = tool.name

    async def run_tool(call: ToolCall) -> dict[str, Any]:
        info = activity.info()
        context = CallContext(
            conversation_id=call.conversation_id or _conversation(info),
            principal=call.principal, occurrence=call.occurrence,
            metadata={**call.metadata, "temporal_activity_id": info.activity_id,
                      "temporal_run_id": info.workflow_run_id, "temporal_attempt": info.attempt})
        return outcome(await runner.call(name, call.arguments, context=context))

    run_tool.__name__ = run_tool.__qualname__ = f"toolproof_{name}"
    run_tool.__doc__ = tool.description
    return activity.defn(name=name)(run_tool)


def outcome(envelope: Envelope) -> dict[str, Any]:
    """The envelope as the activity's result, or raised as the `ApplicationError` Temporal retries by.

    Returned: a success, and an approval still to wait for (the workflow waits, then calls again). Raised,
    retryable: `rate_limited`, `transient_upstream`, `conflict IN_FLIGHT`, with `next_retry_delay` from
    `retry_after_s`. Raised, non-retryable: every other class (`outcome_unknown` included: a person decides).
    """
    data = envelope.to_dict()
    error = envelope.error
    if error is None or _awaits_approval(data):
        return data
    held = error.error_class is ErrorClass.CONFLICT and error.code == "IN_FLIGHT"
    retryable = error.retryable or held
    delay = timedelta(seconds=error.retry_after_s) if retryable and error.retry_after_s else None
    raise ApplicationError(f"{error.error_class.value} {error.code}: {error.message}", data,
                           type=IN_FLIGHT_TYPE if held else failure_type(error.error_class),
                           non_retryable=not retryable, next_retry_delay=delay)


def _awaits_approval(data: dict[str, Any]) -> bool:
    """A gated call that waits for a person (`needs_clarification APPROVAL_REQUIRED`): nothing has run."""
    error, meta = data.get("error") or {}, data.get("meta") or {}
    return bool(error.get("code") == "APPROVAL_REQUIRED" and meta.get("approval_id"))


def _approval_activity(runner: Runner, poll_s: float) -> Any:
    async def await_approval(approval_id: str, timeout_s: float) -> str:
        """Wait for a person's decision (inbox or `toolproof approvals`), heartbeating, up to `timeout_s`.

        A worker lost while waiting: the heartbeat stops, Temporal starts the wait again elsewhere; the
        request lives in the store, so nothing is lost and nothing is decided twice."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            activity.heartbeat()
            step = min(max(deadline - loop.time(), 0.0), 5.0)
            found = await runner.wait_for_approval(approval_id, timeout_s=step, poll_s=poll_s)
            if found.status != "pending" or loop.time() >= deadline:
                return str(found.status_at(time.time()))

    return activity.defn(name=APPROVAL_ACTIVITY)(await_approval)


# --- the workflow side (deterministic: only Temporal's own calls) -------------------------------------------


async def call_tool(
    tool: str,
    arguments: Any = None,
    *,
    principal: str | None = None,
    occurrence: int = 0,
    conversation_id: str | None = None,
    start_to_close_timeout: timedelta = timedelta(seconds=60),
    retry_policy: RetryPolicy = RETRY_POLICY,
    approval_timeout: timedelta | None = timedelta(hours=1),
    task_queue: str | None = None,
) -> dict[str, Any]:
    """Call a tool's activity from a workflow; the envelope (as a dict) whatever happened.

    A gated call waits in `APPROVAL_ACTIVITY` (up to `approval_timeout`; None: return the envelope that
    asks) and is called again once: approved, it runs exactly once (the approval is bound to these very
    arguments; other arguments ask anew); denied or expired, the envelope says so.
    """
    call = ToolCall(arguments, principal, occurrence, conversation_id)

    async def once() -> dict[str, Any]:
        return await _execute(tool, call, start_to_close_timeout, retry_policy, task_queue)

    envelope = await once()
    if approval_timeout is None or not _awaits_approval(envelope):
        return envelope
    try:
        await workflow.execute_activity(
            APPROVAL_ACTIVITY, args=[envelope["meta"]["approval_id"], approval_timeout.total_seconds()],
            task_queue=task_queue, start_to_close_timeout=approval_timeout + timedelta(seconds=30),
            heartbeat_timeout=timedelta(seconds=30), retry_policy=RetryPolicy(maximum_attempts=5), result_type=str)
    except ActivityError:
        pass  # the wait itself failed: the call again says where the request stands
    return await once()


async def _execute(tool: str, call: ToolCall, timeout: timedelta, policy: RetryPolicy,
                   task_queue: str | None) -> dict[str, Any]:
    """One tool activity; its final failure read back as the envelope it carried."""
    try:
        result: dict[str, Any] = await workflow.execute_activity(
            tool, call, start_to_close_timeout=timeout, retry_policy=policy, task_queue=task_queue,
            result_type=dict)
        return result
    except ActivityError as exc:
        return envelope_of_failure(tool, exc)


def envelope_of_failure(tool: str, exc: ActivityError) -> dict[str, Any]:
    """The envelope an activity's failure carried; when it carried none (its last attempt timed out, its
    worker died), `outcome_unknown`: a write may have run, and its journal entry says how it ended."""
    cause = exc.cause
    if isinstance(cause, ApplicationError) and (cause.type or "").startswith(_TYPE_PREFIX) and cause.details:
        carried = cause.details[0]
        if isinstance(carried, dict):
            return carried
    error = OutcomeUnknown(
        f"The activity of {tool} failed in Temporal ({type(cause or exc).__name__}: {cause or exc}); a write "
        "may or may not have been applied, and it was not sent again.", code="ACTIVITY_FAILED",
        hint="Do not retry it blind: its journal entry (`toolproof journal list`) says how it ended.")
    return Envelope.failure(error, Meta(tool, exc.activity_id or "")).to_dict()
