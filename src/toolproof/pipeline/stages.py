"""The stages of one call: guard -> validate -> approval -> claim -> dispatch (attempt, decide) -> settle.

A stage is a function of the runner and the call's `CallState`. It returns None to hand the call on, the
`Envelope` that ends it, or, when it needs I/O, either its steps (a generator that yields effects:
`Dispatch`, `Sleep`, `Io`; is sent their results; returns the envelope or None: a stage may simply be a
generator function) or `Then(effect, next)`: one effect, and the function that takes its result and returns
the next step. `Then` is how the common path (one dispatch that succeeds) runs with no generator at all.
`STAGES` lists the stages in order; a runner runs `Runner.stages`, so a subclass adds a stage (a rate
limiter, an approval gate) with one new function and one tuple; `plan` leaves out, per tool, the stages
that could only hand its calls on. The helpers below the stages (`attempt`, `decide`, `failed`, `give_up`,
...) are the steps the stages share. Policy comes from `decide_retry`, the breaker and the loop guard; I/O
is only ever returned or yielded, and the drivers perform it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeAlias

from ..approvals import new_request, refusal, request_id
from ..audit.trail import build_stop, effect_status, log_stop, stop_log, tool_failure
from ..contract.approval import approval_reason
from ..contract.classify import UNKNOWN_HINT, classify_exception, failed_after_dispatch, may_have_happened
from ..contract.envelope import Envelope, ErrorInfo, Meta, plain_error, success_envelope
from ..contract.errors import (
    CLASS_SPECS,
    TRANSIENT_CLASSES,
    ErrorClass,
    InvalidArgument,
    NextAction,
    OutcomeUnknown,
    ToolError,
    ToolTimeout,
)
from ..contract.redaction import redact_error, secrets_in
from ..contract.tool import Tool
from ..journal.journal import Claim, in_flight_conflict, replay_envelope
from ..journal.keys import key_parts_for
from ..orchestration.breaker import BreakerState
from ..orchestration.policy import RetryDecision, StopReason, decide_retry, stop_hint
from ..stores.intent import Intent
from ..stores.records import StopRecord
from .effects import Dispatch, Effect, Io, Outcome, Pipeline, Sleep, Steps
from .state import CallState

if TYPE_CHECKING:
    from .runner import Runner

#: Effects and audit entries are built with `tuple.__new__`, not the NamedTuple's Python-level `__new__`:
#: 0.18 -> 0.08 µs each (0.27 -> 0.10 µs for the 9 fields of an audit entry; CPU time, best of 30).
_new_tuple: Final = tuple.__new__



class Then(NamedTuple):
    """One effect for the driver to perform, and the function that takes its result to the next step."""

    effect: Effect
    next: Callable[[Runner, CallState, Any], Step]


#: What a stage returns: None (hand on), the envelope that ends the call, or the I/O that will say which
#: (steps may end in the next step: a failed attempt's decision ends in the next attempt).
Step: TypeAlias = "Envelope | Generator[Effect, Any, Step] | Then | None"
#: One stage of the pipeline.
Stage: TypeAlias = Callable[["Runner", CallState], Step]

log = logging.getLogger("toolproof")


def plan(rt: Runner, tool: Tool) -> tuple[Stage, ...]:
    """The runner's stages that can act on this tool's calls; the others would hand every one of them on: a
    read has no journal (claim, settle), a tool without a rule no approval, a runner without one no loop guard.
    Worked out once per tool (`Runner`), it saves their calls on every call."""
    idle: set[Stage] = set()
    if tool.effect != "write":
        idle.update((claim, settle))
    if tool.approval is None:
        idle.add(approval)
    if rt.loop_guard is None:
        idle.add(guard)
    stages = tuple(stage for stage in rt.stages if stage not in idle)
    if runs_here(tool):
        for known in (READ_PLAN, READ_PLAN_UNGUARDED):
            if stages == known:
                return known
    return stages


def runs_here(tool: Tool) -> bool:
    """A sync handler with no `timeout_s` runs on the sync driver's own thread: no thread could stop it anyway,
    so the call's wall budget bounds it only between attempts."""
    return not tool.is_async and tool.timeout_s is None


def envelope_of(s: CallState) -> Envelope:
    """The envelope a call settled on when its last stage handed it on (settle returns it; a read has none)."""
    if s.envelope is None:
        raise RuntimeError("no stage returned an envelope and none was settled on: a runner's stages need dispatch")
    return s.envelope


def run_stages(rt: Runner, s: CallState) -> Pipeline:
    """The pipeline of one call as one generator (a read fallback runs inside another call's steps; tracing
    wraps a call): its plan in order, until a stage returns the envelope. The drivers run the same loop."""
    for stage in s.stages:
        step = stage(rt, s)
        while step is not None:
            if type(step) is Envelope:
                return step
            if type(step) is Then:
                step = step.next(rt, s, (yield from perform(rt, s, step.effect)))
            else:  # steps: perform their effects, then see what they returned
                step = yield from step  # type: ignore[misc]
    return envelope_of(s)


def perform(rt: Runner, s: CallState, effect: Effect) -> Generator[Effect, Any, Any]:
    """A `Then`'s effect, yielded to the driver (as steps would); a dispatch stopped by a BaseException
    settles its write first (`interrupted`)."""
    try:
        return (yield effect)
    except BaseException as exc:
        if type(effect) is Dispatch:
            interrupted(rt, s, exc)
        raise


# --- the stages ---------------------------------------------------------------------------------------------


def guard(rt: Runner, s: CallState) -> Step:
    """The loop guard: an identical repeat of a call that just failed is not sent again."""
    loop_guard = rt.loop_guard
    if loop_guard is None or s.scope is None:
        return None
    blocked = loop_guard.check(s.scope, s.tool.name, s.raw)
    if blocked is None:
        return None
    audit(rt, s, "not_dispatched", blocked.error)
    return give_up(rt, s, blocked.error, blocked.reason)


def validate(rt: Runner, s: CallState) -> Step:
    """Validation, before any side effect; a write gets its idempotency key here (ours, never the model's)."""
    tool = s.tool
    try:
        args = tool.validator.parse(s.raw)  # `tool.parse_arguments`, without its frame
        if tool.effect == "write":
            s.key = key_parts_for(tool, args, s.context)
            s.context = s.context.with_updates(idempotency_key=s.key.key)
        s.bound = tool.bind(args, s.context)
    except InvalidArgument as exc:
        s.validation = "failed"
        s.elapsed_s = rt.clock.monotonic() - s.started
        audit(rt, s, "invalid", exc)
        return failed(rt, s, ErrorInfo.from_exception(exc), None)
    s.validation, s.args = "ok", args
    return None


def claim(rt: Runner, s: CallState) -> Step:
    """The journal (writes only): claim the intent before dispatch; a repeat is replayed or refused."""
    if s.key is None:
        return None
    if s.context.conversation_id is None and not rt.warned_unknown_conversation:
        warn_unknown_conversation(rt, s.tool.name)
    return claim_intent(rt, s)


def warn_unknown_conversation(rt: Runner, tool: str) -> None:
    """Once per runner: writes are being run with no conversation, so a resend and a second order look alike."""
    rt.warned_unknown_conversation = True
    how = ("replayed to every caller (merged)" if rt.journal.unknown_conversation == "replay"
           else "answered with needs_clarification")
    log.warning("toolproof: the write %s was called with no conversation (CallContext.conversation_id is None); "
                "an identical write by the same principal is %s. Pass the conversation: CallContext("
                "conversation_id=...), a framework adapter, or the MCP _meta key dev.toolproof/conversation_id "
                "(docs/idempotency.md, 'Who is asking').", tool, how)


def claim_intent(rt: Runner, s: CallState) -> Steps:
    """Claim this write's intent, waiting while the same key is in flight; replay or refuse a repeat."""
    assert s.key is not None and s.args is not None
    tool, call_id = s.tool, s.context.call_id or ""
    intent = rt.journal.new_intent(tool, s.args, s.context, s.key)
    found, tries = yield from claim_retrying(rt, s, intent)
    if found.kind == "proceed":
        s.intent = intent
        return None
    if found.kind == "replay":
        return replay_envelope(found.intent, tool, call_id)
    assert found.error is not None
    if journal_down(found):
        return (yield from journal_gone(rt, s, found.error, tries))
    return Envelope.failure(found.error, Meta(tool.name, call_id, tool.schema_version, 0, s.key.key))


def journal_down(found: Claim) -> bool:
    """The journal could not be reached (every other refusal is a conflict with a row it read)."""
    error = found.error
    return found.kind == "refuse" and error is not None and error.error_class is ErrorClass.TRANSIENT_UPSTREAM


def claim_retrying(rt: Runner, s: CallState, intent: Intent) -> Generator[Effect, Any, tuple[Claim, int]]:
    """Claim; while the journal cannot be reached, claim again under the runner's retry policy (its attempts,
    backoff and wall budget: nothing was sent, so any write may be retried here). The claim and the tries."""
    policy, tries = rt.retry, 0
    deadline = None if policy.max_wall_s is None else s.started + policy.max_wall_s
    while True:
        found = yield from journal_claim(rt, intent)
        tries += 1
        if not journal_down(found) or tries >= policy.max_attempts:
            return found, tries
        delay = policy.backoff(tries, rt.rng())
        if deadline is not None and rt.clock.monotonic() + delay >= deadline:
            return found, tries
        yield Sleep(delay)


def journal_gone(rt: Runner, s: CallState, error: ToolError, tries: int) -> Steps:
    """The journal stayed unreachable through the retries: the write was never sent; the runner gives up and
    says so (escalate, with a stop record), since nothing will retry it behind the caller's back."""
    times = "once" if tries == 1 else f"{tries} times"
    info = replace(ErrorInfo.from_exception(error), hint=(
        f"Nothing was done: the write was not sent. The write journal was tried {times} and could not be reached; "
        "do not call it again for this request: tell the person it is unavailable now, or hand over."))
    return (yield from give_up(rt, s, info, StopReason.BUDGET_EXHAUSTED))


def dispatch(rt: Runner, s: CallState) -> Step:
    """Attempt, and decide after each failure, until the call has its envelope (in `s.envelope` for `settle`)."""
    begin(rt, s)
    return attempt(rt, s)


def begin(rt: Runner, s: CallState) -> None:
    """What every attempt of the call answers to (with its breaker): the call's wall deadline, its run's budget."""
    max_wall_s = rt.retry.max_wall_s
    s.deadline = None if max_wall_s is None else s.started + max_wall_s
    if s.context.run_id is not None and rt.budget is not None:
        s.run = rt.run_state(s.context.run_id, s.started)


def attempt(rt: Runner, s: CallState) -> Step:
    """One attempt: the handler dispatched (`attempted` takes its outcome), or the breaker's refusal."""
    refused = admit(rt, s)
    if refused is not None:
        return refused
    return _new_tuple(Then, (_new_tuple(Dispatch, (s.tool, *s.bound, s.timeout)), attempted))


def admit(rt: Runner, s: CallState) -> Step:
    """Before an attempt: None when it may be dispatched (its time limit in `s.timeout`), else the breaker's
    refusal, settled on."""
    breaker = s.breaker
    if breaker is not None:
        admission = breaker.admit()
        if not admission.allowed:
            return settle_on(s, refused(rt, s, admission.retry_after_s))
        s.trial = admission.trial
    timeout = s.tool.timeout_s
    deadline = s.deadline
    if deadline is not None:  # the tool's timeout, clamped to what is left of the call's wall budget
        left = deadline - rt.clock.monotonic()
        if timeout is None or left < timeout:
            timeout = left if left > 0.001 else 0.001  # not max(): 0.08 µs a call
    s.timeout = timeout
    return None


def attempted(rt: Runner, s: CallState, outcome: Outcome) -> Step:
    """The attempt's outcome: its value checked against the output schema and the success envelope to settle
    on, or, after a failure, the failure noted (`failed_attempt`) and the decision (`after_failure`)."""
    s.attempts += 1
    s.elapsed_s = outcome.elapsed_s
    if outcome.error is not None:
        return failed_attempt(rt, s, outcome, classify(s, outcome.error))
    try:
        s.result = s.tool.check_output(outcome.value)
    except ToolError as exc:
        return failed_attempt(rt, s, outcome, exc)
    envelope = succeeded(rt, s)
    timeout = s.timeout
    if timeout is not None and outcome.elapsed_s > timeout:
        envelope = deadline_missed(s, envelope, timeout, outcome.elapsed_s)
    s.envelope = envelope
    return None


def after_failure(rt: Runner, s: CallState) -> Generator[Effect, Any, Step]:
    """Retry (after its backoff: the next attempt) or stop (the envelope to settle on); `decide` says which."""
    envelope = yield from decide(rt, s)
    if envelope is None:
        return attempt(rt, s)
    s.envelope = envelope
    return None


def settle_on(s: CallState, steps: Steps) -> Steps:
    """The envelope the steps end with is the one to settle on (a refused attempt of a write still settles)."""
    s.envelope = yield from steps
    return None


def settle(rt: Runner, s: CallState) -> Step:
    """The journal (writes only): record the outcome against the key (replayed to repeats), or release it."""
    assert s.envelope is not None, "settle runs after dispatch"
    return s.envelope if s.intent is None else record(rt, s, s.intent, s.envelope)


def record(rt: Runner, s: CallState, intent: Intent, envelope: Envelope) -> Steps:
    """Record a dispatched write's envelope in the journal; the envelope the caller gets.

    The journal gets the real arguments too: it scrubs their secrets from the outcome it stores and replays."""
    journal, tool, args = rt.journal, s.tool, s.args
    recorded: Envelope = yield Io(lambda: journal.record(intent, tool, envelope, args),
                                  lambda: journal.arecord(intent, tool, envelope, args))
    return recorded


def interrupted(rt: Runner, s: CallState, exc: BaseException) -> None:
    """A handler stopped by a BaseException (KeyboardInterrupt, SystemExit, cancellation) leaves no write intent
    in flight: it is settled as unknown (it may have been applied), with its stop record, before the raise goes on."""
    intent = s.intent
    if intent is None:
        return
    error = OutcomeUnknown(
        f"The tool stopped ({type(exc).__name__}) while the write was running; it may or may not have been applied.",
        code="INTERRUPTED", idempotency_key=intent.key, hint=UNKNOWN_HINT)
    meta = Meta(s.tool.name, s.context.call_id or "", s.tool.schema_version, s.attempts + 1)
    rt.journal.record(intent, s.tool, Envelope.failure(error, meta), s.args)


def approval(rt: Runner, s: CallState) -> Step:
    """The approval gate: a call its tool's `approval=` gates runs only once a person approved it."""
    rule = s.tool.approval
    if rule is None:
        return None
    assert s.args is not None
    reason = approval_reason(rule, s.args, s.context)
    return None if reason is None else ask_approval(rt, s, reason)


def ask_approval(rt: Runner, s: CallState, reason: str) -> Steps:
    """Find this call's request (one per key and arguments; written when there is none): approved hands the
    call on (the journal then runs it once), anything else ends it with the refusal that says why."""
    tool, store, args = s.tool, rt.store, s.args
    assert args is not None
    parts = s.key or key_parts_for(tool, args, s.context)
    rid = request_id(parts.key, parts.fingerprint)
    found = yield Io(lambda: store.approval_get(rid), lambda: store.aapproval_get(rid))
    if found is None:
        request = new_request(tool, args, s.context, key=parts.key, fingerprint=parts.fingerprint, reason=reason,
                              now=time.time(), ttl_s=rt.approval_ttl_s)
        added = yield Io(lambda: store.approval_add(request), lambda: store.aapproval_add(request))
        found = request if added else (yield Io(lambda: store.approval_get(rid), lambda: store.aapproval_get(rid)))
    error = refusal(found, time.time())
    if error is None:
        return None
    audit(rt, s, "approval_" + str((error.state or {}).get("status")), error)
    meta = Meta(tool.name, s.context.call_id or "", tool.schema_version, 0, s.context.idempotency_key,
                extra={"approval_id": rid})
    return Envelope.failure(error, meta)


#: The stages every call runs, in order (`Runner.stages`).
STAGES: Final[tuple[Stage, ...]] = (guard, validate, approval, claim, dispatch, settle)
#: A read's plans when no stage was added, with and without the loop guard: for a handler that runs on the sync
#: driver's thread (sync, no `timeout_s`) `plan` returns these very tuples, so that the driver tells by identity
#: that it may run them unrolled (`drivers.drive_read_sync`).
READ_PLAN: Final[tuple[Stage, ...]] = (guard, validate, dispatch)
READ_PLAN_UNGUARDED: Final[tuple[Stage, ...]] = (validate, dispatch)


# --- the steps of dispatch ------------------------------------------------------------------------------------


def refused(rt: Runner, s: CallState, retry_after_s: float) -> Steps:
    """The breaker refused this attempt: audited as not dispatched; `circuit_open` says what comes instead."""
    s.elapsed_s = 0.0
    audit(rt, s, "not_dispatched", attempt=s.attempts + 1)
    return (yield from circuit_open(rt, s, retry_after_s))


def failed_attempt(rt: Runner, s: CallState, outcome: Outcome, error: ToolError) -> Step:
    """A failed attempt, classified: the breaker counts it, the audit trail records it, `after_failure` decides.

    The one rule for writes applies here: a write that may not be repeated and failed after it was sent
    becomes `outcome_unknown` (`failed_after_dispatch`); the breaker counts the failure as it was.
    """
    if s.breaker is not None:
        s.breaker.record(failure=error.error_class in TRANSIENT_CLASSES, trial=s.trial)
    tool = s.tool
    if may_have_happened(error, effect=tool.effect, idempotent=tool.idempotent):
        error = failed_after_dispatch(error, idempotency_key=error.idempotency_key or s.context.idempotency_key)
    s.error = error
    s.failure = None if outcome.error is None else tool_failure(tool, s.context, s.arguments, outcome.error, error)
    audit(rt, s, "error", error)
    return after_failure(rt, s)


def deadline_missed(s: CallState, envelope: Envelope, timeout: float, elapsed: float) -> Envelope:
    """A success that came after the attempt's time limit (the handler blocked the event loop, so nothing could
    stop it in time): delivered, since the work is done (a write must not look failed and be sent again), and
    flagged in `meta.deadline_missed` with the limit and the time it took; logged for the tool's developer."""
    log.warning("toolproof: %s answered after %.3f s against a %.3f s time limit; an async handler that blocks "
                "the event loop cannot be stopped in time (run blocking work with asyncio.to_thread)",
                s.tool.name, elapsed, timeout)
    late = {"timeout_s": round(timeout, 3), "elapsed_s": round(elapsed, 3)}
    meta = replace(envelope.meta, extra={**envelope.meta.extra, "deadline_missed": late})
    return Envelope(envelope.ok, meta, envelope.result, envelope.error)


def classify(s: CallState, error: Exception) -> ToolError:
    """What the handler raised, as a `ToolError`: the tool's own (its text and values scrubbed of the call's
    secrets), or a classified exception (a lost reply is transient here; `failed_attempt` applies the write rule)."""
    if isinstance(error, ToolError):
        return plain_error(redact_error(error, secrets_in(s.arguments, s.tool.secret_paths)))
    return classify_exception(error)


def succeeded(rt: Runner, s: CallState) -> Envelope:
    """Tell the breaker, the retry bucket, the audit trail and the loop guard; the success envelope."""
    tool = s.tool
    if s.breaker is not None:
        s.breaker.record(False, s.trial)
    if rt.retry_bucket is not None:
        rt.retry_bucket.on_success(s.retry_cost)
    audit(rt, s, "ok")
    if rt.loop_guard is not None and s.scope is not None:
        rt.loop_guard.succeeded(s.scope, tool.name, read=tool.effect == "read")
    extra = None if s.fallback_from is None else {"fallback_from": s.fallback_from}
    return success_envelope(tool.name, s.context.call_id or "", tool.schema_version, s.attempts, s.result, extra)


def decide(rt: Runner, s: CallState) -> Steps:
    """After a failed attempt: retry after a backoff, or stop (`decide_retry` says which and why)."""
    error, tool = s.error, s.tool
    assert error is not None, "decide runs after a failed attempt"
    decision = decide_retry(
        rt.retry, error_class=error.error_class, attempts=s.attempts, now=rt.clock.monotonic(),
        effect=tool.effect, idempotent=tool.idempotent, risk=tool.risk, retry_after_s=error.retry_after_s,
        timed_out=isinstance(error, ToolTimeout), call_deadline=s.deadline, run=s.run, run_budget=rt.budget,
        bucket=rt.retry_bucket, rand=rt.rng(),
    )
    if decision.retry:
        return (yield from retry(rt, s, decision))
    return (yield from stop(rt, s, error, decision.reason))


def retry(rt: Runner, s: CallState, decision: RetryDecision) -> Steps:
    """Wait out the backoff and rebind for the next attempt (None), unless the breaker just opened."""
    breaker = s.breaker
    if breaker is not None and breaker.state is BreakerState.OPEN:
        # This failure opened the breaker: waiting out the backoff would only end in a refusal.
        admission = breaker.admit()
        if not admission.allowed:
            return (yield from circuit_open(rt, s, admission.retry_after_s))
    s.retry_cost = decision.tokens
    if s.run is not None:
        s.run.retries += 1
    if decision.delay_s > 0:
        yield Sleep(decision.delay_s)
    assert s.args is not None
    s.context = replace(s.context, attempt=s.attempts + 1)
    s.bound = s.tool.bind(s.args, s.context)
    return None


def stop(rt: Runner, s: CallState, error: ToolError, reason: StopReason | None) -> Steps:
    """No retry: a failed read falls back to its read-only fallback when it has one; else the call fails."""
    info = ErrorInfo.from_exception(error)
    hint = stop_hint(reason, attempts=s.attempts, retry_after_s=error.retry_after_s)
    if hint is not None:
        info = replace(info, hint=hint)
    if error.error_class in TRANSIENT_CLASSES:
        fallback = read_fallback(rt, s)
        if fallback is not None:
            return (yield from serve_fallback(rt, s, fallback))
    return (yield from failed(rt, s, info, reason))


def circuit_open(rt: Runner, s: CallState, retry_after_s: float) -> Steps:
    """The breaker refused: a read falls back to its read-only fallback; anything else gives up."""
    tool = s.tool
    fallback = read_fallback(rt, s)
    if fallback is not None:
        return (yield from serve_fallback(rt, s, fallback))
    hint = f"{tool.name} is failing upstream; calls are let through again in about {retry_after_s:.0f} s."
    if tool.fallback:
        hint += f" The tool {tool.fallback} can serve instead; use it only if that fits the request."
    info = ErrorInfo(
        error_class=ErrorClass.TRANSIENT_UPSTREAM,
        code="CIRCUIT_OPEN",
        message=f"Calls to {tool.upstream or tool.name} are paused after repeated failures; this call "
        "was not sent.",
        retryable=CLASS_SPECS[ErrorClass.TRANSIENT_UPSTREAM].retryable,
        next_action=NextAction.ESCALATE,
        hint=hint,
        retry_after_s=round(max(retry_after_s, 0.0), 3),
        idempotency_key=s.context.idempotency_key,
    )
    return (yield from give_up(rt, s, info, StopReason.CIRCUIT_OPEN))


def read_fallback(rt: Runner, s: CallState) -> Tool | None:
    """The read tool that serves for a failing read tool (not for a fallback itself), if the toolset has it."""
    tool = s.tool
    name = tool.fallback
    if name is None or s.fallback_from is not None or tool.effect != "read" or name not in rt.toolset:
        return None
    fallback = rt.toolset.get(name)
    return fallback if fallback.effect == "read" else None


def serve_fallback(rt: Runner, s: CallState, fallback: Tool) -> Steps:
    """The whole pipeline again for the fallback tool, with the validated arguments; its envelope says so."""
    assert s.args is not None
    _, stages, breaker = rt.route(fallback)
    state = CallState(fallback, s.context, s.args, rt.clock.monotonic(), stages, breaker, s.scope,
                      fallback_from=s.tool.name)
    envelope = yield from run_stages(rt, state)
    return envelope


# --- failing and giving up ------------------------------------------------------------------------------------


def failed(rt: Runner, s: CallState, info: ErrorInfo, reason: StopReason | None) -> Steps:
    """A failed call: tell the loop guard (about the arguments as sent), and give up when it must."""
    loop_guard, tool = rt.loop_guard, s.tool
    if loop_guard is not None and s.scope is not None:
        # A write held by the journal (outcome unknown) is answered by the journal, with its key, on repeat.
        held = tool.effect == "write" and info.error_class is ErrorClass.OUTCOME_UNKNOWN
        at_limit = loop_guard.failed(s.scope, tool.name, s.raw, info, remember=not info.retryable and not held)
        if at_limit and reason is None:
            reason = StopReason.FAILURE_LIMIT
    if reason is None and info.error_class is ErrorClass.OUTCOME_UNKNOWN:
        reason = StopReason.OUTCOME_UNKNOWN
    elif reason is None and info.next_action is NextAction.ESCALATE:
        reason = StopReason.NON_RETRYABLE
    if reason is None:
        return Envelope.failure(info, Meta(tool.name, s.context.call_id or "", tool.schema_version, s.attempts))
    return (yield from give_up(rt, s, info, reason))


def give_up(rt: Runner, s: CallState, info: ErrorInfo, reason: str) -> Steps:
    """The envelope of a give-up (same class, `next_action: escalate`) and its stop record, written now."""
    tool, attempts = s.tool, s.attempts
    if info.next_action is not NextAction.ESCALATE:
        info = replace(info, next_action=NextAction.ESCALATE)
    status = effect_status(tool, info, dispatched=attempts > 0)
    # A stop decided on local state while the fleet's shared store was away says so, in the record and the meta.
    degraded = {"shared_state": "unreachable"} if rt.shared_state.degraded else None
    stop = build_stop(tool, s.context, s.arguments, info, attempts=attempts, reason=str(reason), status=status,
                      extra=degraded, failure=s.failure)
    yield Io(lambda: write_stop(rt, stop))
    extra = {"stop_id": stop.id, "stop_reason": stop.reason, **(degraded or {})}
    return Envelope.failure(info, Meta(tool.name, s.context.call_id or "", tool.schema_version, attempts,
                                       extra=extra))


def write_stop(rt: Runner, stop: StopRecord) -> None:
    """Store a stop record (a failure to store it is logged, never raised) and tell the hooks and the log."""
    try:
        rt.store.add_stop(stop)
    except Exception:
        stop_log.exception("could not write stop record %s", stop.id)
    if rt.writer is not None:
        rt.writer.emit_stop(stop)
    else:
        log_stop(stop)


def audit(
    rt: Runner, s: CallState, outcome: str, error: ToolError | ErrorInfo | None = None, *, attempt: int | None = None
) -> None:
    """Queue this attempt's audit entry; the writer thread builds, redacts and stores the record."""
    writer = rt.writer
    if writer is not None:
        arguments = s.raw if s.args is None else s.args  # `s.arguments`, without the property's frame
        c = s.context
        writer.submit((time.time(), s.tool, c.call_id, c.run_id, c.conversation_id, c.principal, c.idempotency_key,
                       arguments, s.validation, s.attempts if attempt is None else attempt, s.elapsed_s, outcome,
                       error, s.failure if outcome == "error" else None))  # `AuditEntry`'s fields, in order


def journal_claim(rt: Runner, intent: Intent) -> Generator[Effect, Any, Claim]:
    """Claim, or wait (bounded, polling) while the same key is in flight elsewhere."""
    journal = rt.journal
    deadline: float | None = None
    while True:
        found: Claim = yield Io(lambda: journal.claim(intent), lambda: journal.aclaim(intent))
        if found.kind != "wait":
            return found
        now = rt.clock.monotonic()
        deadline = now + journal.wait_s if deadline is None else deadline
        if now >= deadline:
            return Claim("refuse", found.intent, in_flight_conflict(found.intent))
        yield Sleep(min(journal.poll_s, max(deadline - now, 0.0)))
