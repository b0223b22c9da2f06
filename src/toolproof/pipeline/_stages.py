"""The stages of one call: guard -> validate -> approval -> claim -> dispatch (attempt, decide) -> settle.

A stage is a function of the call's environment (`Env`: the runner's clock, journal, store, policies) and
the call's `CallState`. It returns None to hand the call on, the `Envelope` that ends it, or its steps: a
generator that yields effects (`Dispatch`, `Sleep`, `Io`), is sent their results (or thrown what performing
them raised) and returns the envelope or None. `run` is the one loop over a call's stages; the drivers
(`drivers.py`) only perform effects. `STAGES` lists the stages in order; a runner runs `Runner.stages`, so a
subclass adds a stage (a rate limiter, an approval gate) with one new function and one tuple; `plan` leaves
out, per tool, the stages that could only hand its calls on. The helpers below the stages (`attempted`,
`decide`, `failed`, `give_up`, ...) are the steps the stages share. Policy comes from `decide_retry`, the
breaker and the loop guard; I/O is only ever yielded.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from dataclasses import replace
from typing import Any, Final

from ..approvals import new_request, refusal, request_id
from ..audit._trail import build_stop, effect_status, log_stop, stop_log, tool_failure
from ..contract._approval import approval_reason
from ..contract._classify import UNKNOWN_HINT, classify_exception, failed_after_dispatch, may_have_happened
from ..contract._envelope import Envelope, ErrorInfo, Meta, plain_error, success_envelope
from ..contract._errors import (
    CLASS_SPECS,
    TRANSIENT_CLASSES,
    ErrorClass,
    InvalidArgument,
    NextAction,
    OutcomeUnknown,
    ToolError,
    ToolTimeout,
)
from ..contract._redaction import redact_error, secrets_in
from ..contract._tool import Tool
from ..journal._journal import Claim, in_flight_conflict, replay_envelope
from ..journal._keys import key_parts_for
from ..orchestration.breaker import BreakerState
from ..orchestration.policy import RetryDecision, StopReason, decide_retry, stop_hint
from ..stores._intent import Intent
from ..stores._records import StopRecord
from ._effects import Dispatch, Effect, Io, Outcome, Pipeline, Sleep, Steps
from ._state import CallState, Env, Stage, Step
from ._verify import Verdict, settling, verdict

__all__ = ["STAGES", "Stage", "Step", "approval", "audit", "claim", "dispatch", "give_up", "guard", "plan", "run",
           "settle", "validate"]

log = logging.getLogger("toolproof")


def plan(stages: tuple[Stage, ...], tool: Tool, *, guarded: bool) -> tuple[Stage, ...]:
    """The stages that can act on this tool's calls; the others would hand every one of them on: a read has no
    journal (claim, settle), a tool without a rule no approval, a runner without a loop guard no guard. Worked
    out once per tool (`Runner.route`), it saves their calls on every call."""
    idle: set[Stage] = set()
    if tool.effect != "write":
        idle.update((claim, settle))
    if tool.approval is None:
        idle.add(approval)
    if not guarded:
        idle.add(guard)
    return tuple(stage for stage in stages if stage not in idle)


def run(env: Env, s: CallState) -> Pipeline:
    """The pipeline of one call, the one loop: each stage in turn until one ends the call with its envelope
    (steps performed through the driver on the way); after the last, the envelope dispatch settled on."""
    for stage in s.stages:
        step = stage(env, s)
        if step is None:
            continue
        if not isinstance(step, Envelope):
            step = yield from step
            if step is None:
                continue
        return step
    if s.envelope is None:
        raise RuntimeError("no stage returned an envelope and none was settled on: a runner's stages need dispatch")
    return s.envelope


# --- the stages ---------------------------------------------------------------------------------------------


def guard(env: Env, s: CallState) -> Step:
    """The loop guard: an identical repeat of a call that just failed is not sent again."""
    loop_guard = env.loop_guard
    if loop_guard is None or s.scope is None:
        return None
    blocked = loop_guard.check(s.scope, s.tool.name, s.raw)
    if blocked is None:
        return None
    audit(env, s, "not_dispatched", blocked.error)
    return give_up(env, s, blocked.error, blocked.reason)


def validate(env: Env, s: CallState) -> Step:
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
        s.elapsed_s = env.clock.monotonic() - s.started
        audit(env, s, "invalid", exc)
        return failed(env, s, ErrorInfo.from_exception(exc), None)
    s.validation, s.args = "ok", args
    return None


def claim(env: Env, s: CallState) -> Step:
    """The journal (writes only): claim the intent before dispatch; a repeat is replayed or refused."""
    if s.key is None:
        return None
    if s.context.conversation_id is None:
        env.journal.note_no_conversation(s.tool.name)
    return claim_intent(env, s)


def claim_intent(env: Env, s: CallState) -> Steps:
    """Claim this write's intent, waiting while the same key is in flight; replay or refuse a repeat."""
    assert s.key is not None and s.args is not None
    tool, call_id = s.tool, s.context.call_id or ""
    intent = env.journal.new_intent(tool, s.args, s.context, s.key)
    while True:
        found, tries = yield from claim_retrying(env, s, intent)
        if found.kind == "proceed":
            s.intent = intent
            s.context = s.context.with_updates(fence=intent.fence)
            s.bound = tool.bind(s.args, s.context)  # the tool sees its fencing token
            return None
        if found.kind == "replay":
            audit(env, s, "replayed", attempt=0)  # the trail shows every answer, a stored one too
            return replay_envelope(found.intent, tool, call_id)
        assert found.error is not None
        if journal_down(found):
            return (yield from journal_gone(env, s, found.error, tries))
        if not verifiable(s, found):
            return Envelope.failure(found.error, Meta(tool.name, call_id, tool.schema_version, 0, s.key.key))
        envelope = yield from verify_entry(env, s, found)
        if envelope is not None:
            return envelope  # else the key was released (not done) or settled meanwhile: claim again
        intent = env.journal.new_intent(tool, s.args, s.context, s.key, above=found.intent)


def verifiable(s: CallState, found: Claim) -> bool:
    """A resend of this very write, left unknown (a worker found dead included), that its tool can verify: once
    per call."""
    entry = found.intent
    return (s.tool.verify is not None and s.verified is None and s.key is not None and entry.status == "unknown"
            and entry.key == s.key.key and entry.fingerprint == s.key.fingerprint)


def verify_entry(env: Env, s: CallState, found: Claim) -> Steps:
    """Settle the unknown entry by verify (`verify.settling`): done answers ok with the verified result (and
    the entry replays it from now on); not done released the key (None: the caller claims again); cannot tell
    answers outcome_unknown as before, with what verify said."""
    tool, entry, error = s.tool, found.intent, found.error
    assert error is not None and s.key is not None
    try:
        s.verified = yield from settling(env.journal, tool, entry, s.bound,
                                         secrets=secrets_in(s.arguments, tool.secret_paths))
    except Exception:  # settled by someone else meanwhile, or the store failed: claim again to see
        s.verified = Verdict("unknown", "verify answered, but the journal entry could not be settled")
        return None
    meta = Meta(tool.name, s.context.call_id or "", tool.schema_version, 0, s.key.key)
    if s.verified.said == "not_done":
        return None
    if s.verified.said == "done":
        audit(env, s, "replayed", attempt=0)
        extra = {"verified": {"after": error.code, **s.verified.as_state()}}
        return Envelope.success(s.verified.result, replace(meta, extra=extra))
    error.state = {**(error.state or {}), "verify": s.verified.as_state()}
    return Envelope.failure(error, meta)


def journal_down(found: Claim) -> bool:
    """The journal could not be reached (every other refusal is a conflict with a row it read)."""
    error = found.error
    return found.kind == "refuse" and error is not None and error.error_class is ErrorClass.TRANSIENT_UPSTREAM


def claim_retrying(env: Env, s: CallState, intent: Intent) -> Generator[Effect, Any, tuple[Claim, int]]:
    """Claim; while the journal cannot be reached, claim again under the runner's retry policy (its attempts,
    backoff and wall budget: nothing was sent, so any write may be retried here). The claim and the tries."""
    policy, tries = env.retry, 0
    deadline = None if policy.max_wall_s is None else s.started + policy.max_wall_s
    while True:
        found = yield from journal_claim(env, intent)
        tries += 1
        if not journal_down(found) or tries >= policy.max_attempts:
            return found, tries
        delay = policy.backoff(tries, env.rng())
        if deadline is not None and env.clock.monotonic() + delay >= deadline:
            return found, tries
        yield Sleep(delay)


def journal_gone(env: Env, s: CallState, error: ToolError, tries: int) -> Steps:
    """The journal stayed unreachable through the retries: the write was never sent; the runner gives up and
    says so (escalate, with a stop record), since nothing will retry it behind the caller's back."""
    times = "once" if tries == 1 else f"{tries} times"
    info = replace(ErrorInfo.from_exception(error), hint=(
        f"Nothing was done: the write was not sent. The write journal was tried {times} and could not be reached; "
        "do not call it again for this request: tell the person it is unavailable now, or hand over."))
    return (yield from give_up(env, s, info, StopReason.BUDGET_EXHAUSTED))


def dispatch(env: Env, s: CallState) -> Steps:
    """Attempt, and decide after each failure, until the call has its envelope (in `s.envelope` for `settle`).

    The one home of the interrupt rule: a call stopped by a raise while its write is claimed (a handler's
    KeyboardInterrupt or SystemExit, a cancellation during an attempt, a backoff or a verify) leaves no write in
    flight; it is settled before the raise goes on."""
    max_wall_s = env.retry.max_wall_s  # what every attempt answers to (with its breaker): the call's deadline
    s.deadline = None if max_wall_s is None else s.started + max_wall_s
    if s.context.run_id is not None and env.budget is not None:  # and its run's budget
        s.run = env.run_state(s.context.run_id, s.started)
    try:
        while s.envelope is None:
            refusal_steps = admit(env, s)
            if refusal_steps is not None:
                s.envelope = yield from refusal_steps
                break
            outcome = yield Dispatch(s.tool, *s.bound, s.timeout)
            if not attempted(env, s, outcome):
                s.envelope = yield from decide(env, s)  # None: the next attempt
    except BaseException as exc:
        interrupted(env, s, exc)
        raise
    return None


def admit(env: Env, s: CallState) -> Steps | None:
    """Before an attempt: None when it may be dispatched (its time limit in `s.timeout`), else the breaker's
    refusal, as the steps that end in its envelope."""
    breaker = s.breaker
    if breaker is not None:
        admission = breaker.admit()
        if not admission.allowed:
            return refused(env, s, admission.retry_after_s)
        s.trial = admission.trial
    timeout = s.tool.timeout_s
    deadline = s.deadline
    if deadline is not None:  # the tool's timeout, clamped to what is left of the call's wall budget
        left = deadline - env.clock.monotonic()
        if timeout is None or left < timeout:
            timeout = left if left > 0.001 else 0.001
    s.timeout = timeout
    return None


def attempted(env: Env, s: CallState, outcome: Outcome) -> bool:
    """The attempt's outcome: True with the success envelope settled on (its value checked against the output
    schema); False after a failure, noted (`failed_attempt`) for `decide`."""
    s.attempts += 1
    s.elapsed_s = outcome.elapsed_s
    if outcome.error is not None:
        failed_attempt(env, s, outcome, classify(s, outcome.error))
        return False
    try:
        s.result = s.tool.check_output(outcome.value)
    except ToolError as exc:
        failed_attempt(env, s, outcome, exc)
        return False
    envelope = succeeded(env, s)
    timeout = s.timeout
    if timeout is not None and outcome.elapsed_s > timeout:
        envelope = deadline_missed(s, envelope, timeout, outcome.elapsed_s)
    s.envelope = envelope
    return True


def settle(env: Env, s: CallState) -> Step:
    """The journal (writes only): record the outcome against the key (replayed to repeats), or release it."""
    assert s.envelope is not None, "settle runs after dispatch"
    intent = s.intent
    if intent is None:
        return s.envelope
    return env.journal.recording(intent, s.tool, s.envelope, s.args, dispatched=s.attempts > 0, running=s.running)


def interrupted(env: Env, s: CallState, exc: BaseException) -> None:
    """A handler stopped by a BaseException leaves no write intent in flight: it is settled as unknown (it may
    have been applied), with its stop record, before the raise goes on. Performed here, not yielded: a closed
    or cancelled pipeline may not get another effect performed."""
    intent = s.intent
    if intent is None:
        return
    error = OutcomeUnknown(
        f"The tool stopped ({type(exc).__name__}) while the write was running; it may or may not have been applied.",
        code="INTERRUPTED", idempotency_key=intent.key, hint=UNKNOWN_HINT)
    meta = Meta(s.tool.name, s.context.call_id or "", s.tool.schema_version, s.attempts + 1)
    env.journal.record(intent, s.tool, Envelope.failure(error, meta), s.args)


def approval(env: Env, s: CallState) -> Step:
    """The approval gate: a call its tool's `approval=` gates runs only once a person approved it."""
    rule = s.tool.approval
    if rule is None:
        return None
    assert s.args is not None
    reason = approval_reason(rule, s.args, s.context)
    return None if reason is None else ask_approval(env, s, reason)


def ask_approval(env: Env, s: CallState, reason: str) -> Steps:
    """Find this call's request (one per key and arguments; written when there is none): approved hands the
    call on (the journal then runs it once), anything else ends it with the refusal that says why."""
    tool, store, args = s.tool, env.store, s.args
    assert args is not None
    parts = s.key or key_parts_for(tool, args, s.context)
    rid = request_id(parts.key, parts.fingerprint)
    found = yield Io(store.approval_get, store.aapproval_get, (rid,))
    if found is None:
        request = new_request(tool, args, s.context, key=parts.key, fingerprint=parts.fingerprint, reason=reason,
                              now=env.clock.time(), ttl_s=env.approval_ttl_s)
        added = yield Io(store.approval_add, store.aapproval_add, (request,))
        found = request if added else (yield Io(store.approval_get, store.aapproval_get, (rid,)))
    error = refusal(found, env.clock.time())
    if error is None:
        return None
    audit(env, s, "approval_" + str((error.state or {}).get("status")), error)
    meta = Meta(tool.name, s.context.call_id or "", tool.schema_version, 0, s.context.idempotency_key,
                extra={"approval_id": rid})
    return Envelope.failure(error, meta)


#: The stages every call runs, in order (`Runner.stages`).
STAGES: Final[tuple[Stage, ...]] = (guard, validate, approval, claim, dispatch, settle)


# --- the steps of dispatch ------------------------------------------------------------------------------------


def refused(env: Env, s: CallState, retry_after_s: float) -> Steps:
    """The breaker refused this attempt: audited as not dispatched, with its class and code; `circuit_open`
    says what comes instead."""
    s.elapsed_s = 0.0
    audit(env, s, "not_dispatched", circuit_info(s, retry_after_s), attempt=s.attempts + 1)
    return (yield from circuit_open(env, s, retry_after_s))


def failed_attempt(env: Env, s: CallState, outcome: Outcome, error: ToolError) -> None:
    """A failed attempt, classified: the breaker counts it, the audit trail records it, `decide` comes next.

    The write rule applies here: a write that may not be repeated and whose effect may have happened becomes
    `outcome_unknown` (`may_have_happened`, read off the class table); the breaker counts the failure as it was.
    """
    if s.breaker is not None:
        s.breaker.record(error.error_class in TRANSIENT_CLASSES, s.trial)
    tool = s.tool
    s.running = outcome.running
    if may_have_happened(error, effect=tool.effect, idempotent=tool.idempotent):
        s.unverified = error
        error = failed_after_dispatch(error, idempotency_key=error.idempotency_key or s.context.idempotency_key)
        if outcome.running is not None:  # a resend's verify waits out the lease: this attempt may still commit
            error.state = {**(error.state or {}), "attempt_running": True}
    s.error = error
    s.failure = None if outcome.error is None else tool_failure(tool, s.context, s.arguments, outcome.error, error)
    audit(env, s, "error", error)


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


def succeeded(env: Env, s: CallState) -> Envelope:
    """Tell the breaker, the retry bucket, the audit trail and the loop guard; the success envelope."""
    tool = s.tool
    if s.breaker is not None:
        s.breaker.record(False, s.trial)
    if env.retry_bucket is not None:
        env.retry_bucket.on_success(s.retry_cost)
    audit(env, s, "ok")
    if env.loop_guard is not None and s.scope is not None:
        env.loop_guard.succeeded(s.scope, tool.name, read=tool.effect == "read")
    extra = None if s.fallback_from is None else {"fallback_from": s.fallback_from}
    return success_envelope(tool.name, s.context.call_id or "", tool.schema_version, s.attempts, s.result, extra)


def decide(env: Env, s: CallState) -> Steps:
    """After a failed attempt: retry after a backoff, or stop (`decide_retry` says which and why). A write whose
    outcome the failure left unknown asks its tool's `verify` first (`verify_attempt`)."""
    if s.unverified is not None and s.tool.verify is not None:
        envelope = yield from verify_attempt(env, s)
        if envelope is not None:
            return envelope
    error, tool = s.error, s.tool
    assert error is not None, "decide runs after a failed attempt"
    # A failure whose raiser says nothing was done (`effect_done=False`: an upstream it never reached, a verify
    # that found no effect) may be sent again under the same key. A class alone (a 429 an upstream answered)
    # is not that knowledge: the write stops, and its stop record says `not_done`.
    no_effect = error.effect_done is False
    decision = decide_retry(
        env.retry, error_class=error.error_class, attempts=s.attempts, now=env.clock.monotonic(),
        effect=tool.effect, idempotent=tool.idempotent or no_effect, risk=tool.risk, retry_after_s=error.retry_after_s,
        timed_out=isinstance(error, ToolTimeout), call_deadline=s.deadline, run=s.run, run_budget=env.budget,
        bucket=env.retry_bucket, rand=env.rng(),
    )
    if decision.retry:
        return (yield from retry(env, s, decision))
    return (yield from stop(env, s, error, decision.reason))


def verify_attempt(env: Env, s: CallState) -> Steps:
    """The failed attempt left the write's outcome unknown: ask the tool's verify (after the attempt, if still
    running, has finished). Done: the call succeeds with the verified result (`meta.verified`). Not done: the
    failure as it was, known to have done nothing (`decide` may send it again, the journal releases it). Cannot
    tell: unknown as before, with what verify said in the error's state (and so in the stop record)."""
    cause, s.unverified = s.unverified, None
    assert cause is not None and s.error is not None
    found = yield from verdict(s.tool, s.bound, running=s.running, wait_s=s.tool.timeout_s or 1.0,
                               secrets=secrets_in(s.arguments, s.tool.secret_paths))
    s.verified = found
    if found.said == "done":
        s.result = found.result
        envelope = succeeded(env, s)
        return replace(envelope, meta=replace(envelope.meta, extra={**envelope.meta.extra, "verified": {
            "after": s.error.code, **found.as_state()}}))
    if found.said == "not_done":
        cause.effect_done = False
        s.error = cause
    else:
        s.error.state = {**(s.error.state or {}), "verify": found.as_state()}
    return None


def retry(env: Env, s: CallState, decision: RetryDecision) -> Steps:
    """Wait out the backoff and rebind for the next attempt (None), unless the breaker just opened."""
    breaker = s.breaker
    if breaker is not None and breaker.state is BreakerState.OPEN:
        # This failure opened the breaker: waiting out the backoff would only end in a refusal.
        admission = breaker.admit()
        if not admission.allowed:
            return (yield from circuit_open(env, s, admission.retry_after_s))
    s.retry_cost = decision.tokens
    if s.run is not None:
        s.run.retries += 1
    if decision.delay_s > 0:
        yield Sleep(decision.delay_s)
    assert s.args is not None
    s.context = replace(s.context, attempt=s.attempts + 1)
    s.bound = s.tool.bind(s.args, s.context)
    return None


def stop(env: Env, s: CallState, error: ToolError, reason: StopReason | None) -> Steps:
    """No retry: a failed read falls back to its read-only fallback when it has one; else the call fails."""
    info = ErrorInfo.from_exception(error)
    hint = stop_hint(reason, attempts=s.attempts, retry_after_s=error.retry_after_s)
    if hint is not None:
        info = replace(info, hint=hint)
    if error.error_class in TRANSIENT_CLASSES:
        fallback = read_fallback(env, s)
        if fallback is not None:
            return (yield from serve_fallback(env, s, fallback))
    return (yield from failed(env, s, info, reason))


def circuit_open(env: Env, s: CallState, retry_after_s: float) -> Steps:
    """The breaker refused: a read falls back to its read-only fallback; anything else gives up."""
    fallback = read_fallback(env, s)
    if fallback is not None:
        return (yield from serve_fallback(env, s, fallback))
    return (yield from give_up(env, s, circuit_info(s, retry_after_s), StopReason.CIRCUIT_OPEN))


def circuit_info(s: CallState, retry_after_s: float) -> ErrorInfo:
    """What a call its breaker refused is told: nothing was sent, when calls go through again, what can serve."""
    tool = s.tool
    hint = f"{tool.name} is failing upstream; calls are let through again in about {retry_after_s:.0f} s."
    if tool.fallback:
        hint += f" The tool {tool.fallback} can serve instead; use it only if that fits the request."
    return ErrorInfo(
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


def read_fallback(env: Env, s: CallState) -> Tool | None:
    """The read tool that serves for a failing read tool (not for a fallback itself), if the toolset has it."""
    tool = s.tool
    name = tool.fallback
    if name is None or s.fallback_from is not None or tool.effect != "read" or name not in env.toolset:
        return None
    fallback = env.toolset.get(name)
    return fallback if fallback.effect == "read" else None


def serve_fallback(env: Env, s: CallState, fallback: Tool) -> Steps:
    """The whole pipeline again for the fallback tool, with the validated arguments; its envelope says so."""
    assert s.args is not None
    _, stages, breaker = env.route(fallback)
    state = CallState(fallback, s.context, s.args, env.clock.monotonic(), stages, breaker, s.scope,
                      fallback_from=s.tool.name)
    envelope = yield from run(env, state)
    return envelope


# --- failing and giving up ------------------------------------------------------------------------------------


def failed(env: Env, s: CallState, info: ErrorInfo, reason: StopReason | None) -> Steps:
    """A failed call: tell the loop guard (about the arguments as sent), and give up when it must."""
    loop_guard, tool = env.loop_guard, s.tool
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
    return (yield from give_up(env, s, info, reason))


def give_up(env: Env, s: CallState, info: ErrorInfo, reason: str) -> Steps:
    """The envelope of a give-up (same class, `next_action: escalate`) and its stop record, written now."""
    tool, attempts = s.tool, s.attempts
    if info.next_action is not NextAction.ESCALATE:
        info = replace(info, next_action=NextAction.ESCALATE)
    status = effect_status(tool, info, dispatched=attempts > 0)
    # A stop decided on local state while the fleet's shared store was away says so, in the record and the meta.
    degraded = {"shared_state": "unreachable"} if env.shared_state.degraded else None
    who: dict[str, Any] = {"principal": s.context.principal} if s.context.principal is not None else {}
    if s.verified is not None:  # what the tool's verify said of the outcome
        who["verify"] = s.verified.as_state()
    stop = build_stop(tool, s.context, s.arguments, info, attempts=attempts, reason=str(reason), status=status,
                      extra={**who, **(degraded or {})}, failure=s.failure)
    yield from write_stop(env, stop)
    extra = {"stop_id": stop.id, "stop_reason": stop.reason, **(degraded or {})}
    return Envelope.failure(info, Meta(tool.name, s.context.call_id or "", tool.schema_version, attempts,
                                       extra=extra))


def write_stop(env: Env, stop: StopRecord) -> Generator[Effect, Any, None]:
    """Store a stop record (a failure to store it is logged, never raised) and tell the hooks and the log."""
    store = env.store
    try:
        yield Io(store.add_stop, store.aadd_stop, (stop,))
    except Exception:
        stop_log.exception("could not write stop record %s", stop.id)
    if env.writer is not None:
        env.writer.emit_stop(stop)
    else:
        log_stop(stop)


def audit(
    env: Env, s: CallState, outcome: str, error: ToolError | ErrorInfo | None = None, *, attempt: int | None = None
) -> None:
    """Queue this attempt's audit entry; the writer thread builds, redacts and stores the record."""
    writer = env.writer
    if writer is not None:
        arguments = s.raw if s.args is None else s.args  # `s.arguments`, without the property's frame
        c = s.context
        writer.submit((env.clock.time(), s.tool, c.call_id, c.run_id, c.conversation_id, c.principal, c.idempotency_key,
                       arguments, s.validation, s.attempts if attempt is None else attempt, s.elapsed_s, outcome,
                       error, s.failure if outcome == "error" else None))  # `AuditEntry`'s fields, in order


def journal_claim(env: Env, intent: Intent) -> Generator[Effect, Any, Claim]:
    """Claim, or wait (bounded, polling) while the same key is in flight elsewhere."""
    journal = env.journal
    deadline: float | None = None
    while True:
        found = yield from journal.claiming(intent)
        if found.kind != "wait":
            return found
        now = env.clock.monotonic()
        deadline = now + journal.wait_s if deadline is None else deadline
        if now >= deadline:
            return Claim("refuse", found.intent, in_flight_conflict(found.intent))
        yield Sleep(min(journal.poll_s, max(deadline - now, 0.0)))
