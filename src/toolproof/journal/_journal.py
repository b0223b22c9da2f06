"""The write journal: the intent state machine over a `Store`, after Stripe and the IETF Idempotency-Key draft.

Before a write is dispatched its intent is claimed with one `INSERT ... ON CONFLICT DO NOTHING`; the
key and the operation id are both UNIQUE, so exactly one caller wins. What a repeat gets back:

| found                                        | answer                                                   |
|----------------------------------------------|----------------------------------------------------------|
| nothing                                      | claimed: dispatch                                        |
| same key, same arguments, `done`/`failed`    | the stored envelope, `meta.replayed = true`, no dispatch |
| same key, `in_flight` (live lease)           | wait up to `wait_s`, then replay, else `conflict IN_FLIGHT` |
| same key, `in_flight`, lease ended           | becomes `unknown` (its worker died): as below            |
| same key, `unknown`                          | `outcome_unknown` with the key, no dispatch              |
| same operation, other arguments, unresolved  | `conflict UNRESOLVED_OPERATION`, no dispatch             |
| same operation, other arguments, `done`      | `needs_clarification ALREADY_DONE_DIFFERENT_ARGS`        |
| same key, `done`/`failed`, no conversation   | `needs_clarification REPEAT_WITHOUT_CONVERSATION` (policy) |

After the dispatch the outcome settles the intent (`settle`): success -> `done`; an error a tool raises
before any effect (invalid_argument, not_found, ...) -> released (deleted); partial_execution or
internal_error -> `failed` (replayed, as Stripe replays a 500); a timeout or transport failure -> `unknown`
with a stop record, unless the tool is idempotent end to end (then released: a retry re-sends the key).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from ..contract._classify import UNKNOWN_HINT, failed_after_dispatch
from ..contract._context import CallContext, new_call_id
from ..contract._envelope import Envelope, ErrorInfo, MalformedEnvelope, Meta, utc_timestamp
from ..contract._errors import (
    Conflict,
    EffectFact,
    ErrorClass,
    InternalError,
    NeedsClarification,
    NotFound,
    OutcomeUnknown,
    ToolError,
    TransientUpstream,
    effect_fact,
)
from ..contract._plain import NotPlainJson, plain_json
from ..contract._redaction import redact, redact_arguments, redact_text, redact_values, secrets_in
from ..contract._tool import Tool
from ..stores._base import FinishStatus, Store, StoreUnavailable
from ..stores._intent import Intent, IntentStatus
from ..stores._records import AuditRecord, EffectStatus, StopRecord
from ..stores._steps import Io, IoSteps, adrive, aperform_io, drive, perform_io
from ._keys import KeyParts
from ._lease import LeaseKeeper

DEFAULT_RETENTION_S: Final = 24 * 3600.0
#: A claim's lease when a heartbeat renews it (every third of it) while the handler runs.
HEARTBEAT_LEASE_S: Final = 30.0
log: Final = logging.getLogger("toolproof")

Settlement = Literal["done", "failed", "unknown", "release"]
#: What a finished write's identical repeat gets when the call names no conversation: `clarify` (never merged
#: with another caller's write, never re-dispatched: needs_clarification) or `replay` (merge, as for one caller).
UnknownConversation = Literal["clarify", "replay"]


@dataclass(frozen=True, slots=True)
class Claim:
    """The journal's answer before dispatch: `proceed`, `replay` the stored envelope, `wait`, or `refuse`."""

    kind: Literal["proceed", "replay", "wait", "refuse"]
    intent: Intent  # ours when proceeding, else the one found
    error: ToolError | None = None


class Journal:
    """Exactly-once bookkeeping for writes over one store. Safe across threads, tasks and processes."""

    def __init__(
        self,
        store: Store,
        *,
        lease_s: float | None = None,
        wait_s: float = 5.0,
        poll_s: float = 0.01,
        retention_s: float = DEFAULT_RETENTION_S,
        now: Callable[[], float] = time.time,
        owner: str | None = None,
        unknown_conversation: UnknownConversation = "clarify",
        clarify_window_s: float | None = None,
        heartbeat: bool = True,
    ) -> None:
        if unknown_conversation not in ("clarify", "replay"):
            raise ValueError(f"unknown_conversation must be 'clarify' or 'replay', got {unknown_conversation!r}")
        self.unknown_conversation = unknown_conversation
        self.clarify_window_s = clarify_window_s  # None: the retention
        self.store = store
        self.lease_s = lease_s
        self.wait_s = wait_s
        self.poll_s = poll_s
        self.retention_s = retention_s
        self.now = now
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"
        self._warned_no_conversation = False
        lease = HEARTBEAT_LEASE_S if lease_s is None else lease_s
        self.keeper = LeaseKeeper(store, now, lease_s=lease, every_s=lease / 3) if heartbeat else None

    def close(self) -> None:
        """Stop the heartbeat (leases still held run out by themselves)."""
        if self.keeper is not None:
            self.keeper.close()

    def note_no_conversation(self, tool: str) -> None:
        """Once per journal: writes are being run with no conversation, so a resend and a second order look
        alike; the log says what an identical write will get, and how to name the conversation."""
        if self._warned_no_conversation:
            return
        self._warned_no_conversation = True
        how = "replayed to every caller (merged)" if self.unknown_conversation == "replay" else (
            "answered with needs_clarification")
        log.warning("toolproof: the write %s was called with no conversation (CallContext.conversation_id is None); "
                    "an identical write by the same principal is %s. Pass the conversation: CallContext("
                    "conversation_id=...), a framework adapter, or the MCP _meta key dev.toolproof/conversation_id "
                    "(docs/idempotency.md, 'Who is asking').", tool, how)

    # --- before dispatch ------------------------------------------------------------------------------------
    def new_intent(self, tool: Tool, arguments: Mapping[str, Any], context: CallContext, parts: KeyParts, *,
                   above: Intent | None = None) -> Intent:
        """The intent to claim; `above`, the holder it takes over from, whose fencing token it must exceed."""
        now = self.now()
        if above is not None and above.fence >= int(now * 1_000_000):
            now = (above.fence + 1) / 1_000_000
        return Intent(
            key=parts.key, operation_id=parts.operation_id, tool=tool.name, fingerprint=parts.fingerprint,
            arguments=redact_arguments(tool, arguments, validated=True), status="in_flight", created_at=now,
            updated_at=now, owner=self.owner, lease_until=now + self.lease_for(tool), call_id=context.call_id,
            conversation_id=context.conversation_id, principal=context.principal,
        )

    def lease_for(self, tool: Tool) -> float:
        """How long a claim is trusted without its worker: past it, the intent is `unknown`, never re-run. With
        the heartbeat (the default) `lease_s` or 30 s, renewed while the handler runs; without, long enough
        for the tool's whole run: twice its timeout plus 30 s, at least 60 s, or 300 s for a tool with none."""
        if self.keeper is not None:
            return self.keeper.lease_s
        if self.lease_s is not None:
            return self.lease_s
        return max(60.0, 2 * tool.timeout_s + 30.0) if tool.timeout_s else 300.0

    def hold(self, intent: Intent) -> None:
        """Our claim is about to be dispatched: keep its lease alive while the handler runs."""
        if self.keeper is not None:
            self.keeper.hold(intent.key, intent.owner)

    def let_go(self, intent: Intent, running: Future[Any] | None = None) -> None:
        """The handler has ended (or will, `running`): its lease is no longer renewed from then on."""
        keeper = self.keeper
        if keeper is None:
            return
        if running is None or running.done():
            keeper.let_go(intent.key)
        else:
            running.add_done_callback(lambda _: keeper.ended(intent.key, intent.owner))

    def claiming(self, intent: Intent) -> IoSteps[Claim]:
        """The claim, as steps (both drivers perform them): `proceed`, `replay`, `wait` or `refuse`. A store
        that cannot be reached is a refusal that says so, never a raise."""
        store, started = self.store, time.monotonic()
        try:
            for _ in range(3):
                if (yield Io(store.journal_claim, store.ajournal_claim, (intent,))):
                    self.hold(intent)
                    return Claim("proceed", intent)
                found = (yield Io(store.journal_get, store.ajournal_get, (intent.key,))) or (
                    yield Io(store.journal_for_operation, store.ajournal_for_operation, (intent.operation_id,)))
                if found is not None and found.status == "in_flight" and found.lease_until < self.now():
                    yield from self.lapsing(found)
                    found = yield Io(store.journal_get, store.ajournal_get, (found.key,))
                decided = None if found is None else self.decide(intent, found)
                if decided is not None:
                    return decided
                if found is not None:  # a finished entry past the clarification window: forget it, claim again
                    yield Io(store.journal_prune, store.ajournal_prune, (self.now() - self.window_s, found.key))
        except Exception as exc:
            return Claim("refuse", intent, journal_unavailable(exc, store.url, time.monotonic() - started))
        return Claim("wait", intent)  # the row came and went three times: someone is busy with it

    def claim(self, intent: Intent) -> Claim:
        """`claiming`, performed here and now."""
        return drive(self.claiming(intent), perform_io)

    async def aclaim(self, intent: Intent) -> Claim:
        """`claiming`, awaited."""
        return await adrive(self.claiming(intent), aperform_io)

    # --- a worker that died holding a claim ---------------------------------------------------------------
    def lapsing(self, found: Intent) -> IoSteps[int]:
        """Turn a claim whose lease ran out `unknown`, with its stop record. The record goes first, under an id
        derived from the claim, so every observer writes the same one (the store keeps one) and a crash in
        between never leaves an unknown write without its record; then the conditional UPDATE."""
        store, now = self.store, self.now()
        stop = lost_worker_stop(found, now)
        yield Io(store.add_stop_once, store.aadd_stop_once, (stop,))
        changed: int = yield Io(store.journal_expire, store.ajournal_expire, (now, found.key))
        if not changed:
            after = yield Io(store.journal_get, store.ajournal_get, (found.key,))
            yield Io(self._settled_meanwhile, None, (stop, after, found))  # rare: on a worker thread when async
        return changed

    def _settled_meanwhile(self, stop: StopRecord, after: Intent | None, found: Intent) -> None:
        """The UPDATE changed nothing: another observer expired it (fine), or its slow worker settled the write
        after all, after its lease ran out: then the record just written is resolved with what happened."""
        same = after is not None and after.owner == found.owner and after.created_at == found.created_at
        if same and after is not None and after.status in ("unknown", "in_flight"):
            return
        current = self.store.get_stop(stop.id)
        if current is None or current.resolved_at is not None:
            return
        status = after.status if same and after is not None else "released"
        effect: EffectStatus | None = "done" if status == "done" else "not_done" if status == "released" else None
        self.store.resolve_stop(stop.id, resolution=f"its worker settled the write after its lease ran out: {status}",
                                effect_status=effect)

    @property
    def window_s(self) -> float:
        """How long a finished write answers an identical repeat from an unknown conversation with a question."""
        return self.retention_s if self.clarify_window_s is None else self.clarify_window_s

    def decide(self, mine: Intent, found: Intent) -> Claim | None:
        """`decide`, except that a call naming no conversation never gets another caller's write replayed:
        inside the window it is asked to clarify; None when the finished entry is older (forget it, claim again).
        """
        claim = decide(mine, found)
        if claim.kind != "replay" or mine.conversation_id is not None or self.unknown_conversation == "replay":
            return claim
        if found.updated_at < self.now() - self.window_s:
            return None
        return Claim("refuse", found, repeat_without_conversation(found))

    # --- after dispatch -------------------------------------------------------------------------------------
    def recording(self, intent: Intent, tool: Tool, envelope: Envelope, arguments: Any = None, *,
                  dispatched: bool = True, running: Future[Any] | None = None) -> IoSteps[Envelope]:
        """Settle the intent with the write's envelope, as steps; the envelope the caller gets. `arguments` (the
        real ones) name the secrets to scrub from what is stored and replayed, should the result or an error
        message repeat them. A store that fails here leaves the intent to its lease (then `unknown`, never lost,
        never re-run) and says so in `meta.journal`. The lease is no longer renewed once it is settled, or once
        the attempt still `running` after its time limit ends."""
        try:
            return (yield from self._recording(intent, tool, envelope, arguments, dispatched))
        finally:
            self.let_go(intent, running)

    def _recording(self, intent: Intent, tool: Tool, envelope: Envelope, arguments: Any,
                   dispatched: bool) -> IoSteps[Envelope]:
        store = self.store
        how, final = settle(intent, tool, envelope, dispatched=dispatched)
        secrets = secrets_in(arguments, tool.secret_paths) if arguments is not None else []
        try:
            if how == "release":
                ours = yield Io(store.journal_release, store.ajournal_release, (intent.key, intent.owner))
            else:
                outcome = stored_outcome(final, secrets)
                ours = yield Io(store.journal_finish, store.ajournal_finish, (intent.key, intent.owner, how, outcome,
                                                                               self.now()))
                if ours and how == "unknown" and "stop_id" not in final.meta.extra:  # the orchestrator's, or ours
                    yield Io(store.add_stop, store.aadd_stop, (self._stop(intent, final, secrets),))
            if not ours:  # its lease lapsed or was taken over: the owner's entry stands, this is evidence
                yield Io(store.add_stop, store.aadd_stop, (fenced_stop(intent, final, how, secrets, self.now()),))
                return _with_extra(final, journal="fenced")
        except Exception:
            return _with_extra(final, journal="unrecorded")
        return final

    def record(self, intent: Intent, tool: Tool, envelope: Envelope, arguments: Any = None) -> Envelope:
        """`recording`, performed here and now."""
        return drive(self.recording(intent, tool, envelope, arguments), perform_io)

    async def arecord(self, intent: Intent, tool: Tool, envelope: Envelope, arguments: Any = None) -> Envelope:
        """`recording`, awaited."""
        return await adrive(self.recording(intent, tool, envelope, arguments), aperform_io)

    def _stop(self, intent: Intent, envelope: Envelope, secrets: list[str]) -> StopRecord:
        error = envelope.error
        assert error is not None
        return StopRecord(
            id=new_call_id(), at=self.now(), tool=intent.tool, call_id=intent.call_id or envelope.meta.call_id,
            arguments=intent.arguments, error_class=str(error.error_class), code=error.code,
            message=redact_text(error.message, secrets),
            attempts=envelope.meta.attempts, effect_status="unknown", reason="outcome_unknown",
            conversation_id=intent.conversation_id, idempotency_key=intent.key,
        )

    # --- reconciliation and retention ---------------------------------------------------------------------
    def reconcile(
        self,
        key: str,
        outcome: Literal["done", "not_done"],
        *,
        result: Any = None,
        note: str | None = None,
        force: bool = False,
    ) -> Intent:
        """Settle an intent a person checked: `done` (repeats get `result` replayed) or `not_done` (released,
        so the call may be made again). Only `unknown` intents (a lease that ran out counts) are settled
        unless `force` (with a `note`); every reconciliation is an audit row. Linked stop records are resolved."""
        if outcome not in ("done", "not_done"):
            raise ValueError(f"outcome must be 'done' or 'not_done', got {outcome!r}")
        if force and not (note and note.strip()):
            raise ValueError("force needs a note saying what was found")
        found = self.store.journal_get(key)
        if found is not None and found.status == "in_flight" and found.lease_until < self.now():
            drive(self.lapsing(found), perform_io)
            found = self.store.journal_get(key)
        if found is None:
            raise NotFound(f"No journal entry has the key {key!r}.", code="KEY_NOT_FOUND", field="key",
                           received=key, hint="List the open entries with `toolproof journal list`.")
        if found.status != "unknown" and not force:
            raise Conflict(f"The journal entry {key!r} is {found.status}, not unknown: nothing to reconcile.",
                           code="NOT_UNKNOWN", state={"status": found.status}, idempotency_key=key,
                           hint="Only entries whose outcome is unknown are reconciled; force it with a note.")
        done = outcome == "done"
        resolution = redact_text(note) if note else ("reconciled: done" if done else "reconciled: not done")
        stored = {"ok": True, "result": redact(result), "attempts": 0} if done else None
        settled = self.store.journal_resolve(key, done=done, outcome=stored, resolution=resolution, now=self.now())
        self.store.resolve_stops_for_key(key, resolution=resolution, effect_status="done" if done else "not_done")
        self.store.append_audit([reconcile_audit(found, outcome, resolution, force, self.now())])
        return settled or replace(found, resolution=resolution)

    def expire(self) -> int:
        """Mark every intent whose worker's lease ended as `unknown`, each with its stop record."""
        now = self.now()
        lapsed = [i for i in self.store.journal_list(status="in_flight", limit=1_000_000) if i.lease_until < now]
        return sum(drive(self.lapsing(intent), perform_io) for intent in lapsed)

    def list(self, status: IntentStatus | None = None, limit: int = 100) -> list[Intent]:
        self.expire()
        return self.store.journal_list(status=status, limit=limit)

    def show(self, key: str) -> Intent | None:
        return self.store.journal_get(key)

    def prune(self, older_than_s: float | None = None) -> int:
        """Forget finished intents older than `older_than_s` (default: the retention, 24 h). Never below
        the retention unless asked explicitly; unknown and in-flight intents are never pruned."""
        age = self.retention_s if older_than_s is None else older_than_s
        if age < 0:
            raise ValueError("older_than_s must be >= 0")
        return self.store.journal_prune(self.now() - age)

    def replay(self, found: Intent, tool: Tool, call_id: str) -> Envelope:
        return replay_envelope(found, tool, call_id)


_UNITS: Final = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def reconcile_audit(found: Intent, outcome: str, note: str, force: bool, now: float) -> AuditRecord:
    """The audit row of a reconciliation: what the entry was, what a person said, and whether it was forced."""
    return AuditRecord(
        at=now, call_id=new_call_id(), tool=found.tool, schema_version=None,
        arguments={"reconciled": outcome, "was": found.status, "force": force, "note": note},
        validation="skipped", attempt=0, latency_ms=0.0, outcome="reconciled",
        conversation_id=found.conversation_id, principal=found.principal,
        code="RECONCILED_FORCED" if force else "RECONCILED", idempotency_key=found.key,
    )


def parse_duration(text: str) -> float:
    """Seconds from `90`, `90s`, `30m`, `24h`, `7d`, `2w` (for `journal prune --older-than`)."""
    raw = text.strip().lower()
    unit = raw[-1:] if raw[-1:] in _UNITS else "s"
    number = raw[:-1] if raw[-1:] in _UNITS else raw
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 30m, 24h, 7d)") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"a duration must be a finite number >= 0, got {text!r}")
    return value * _UNITS[unit]


# --- pure decisions --------------------------------------------------------------------------------------------


def decide(mine: Intent, found: Intent) -> Claim:
    """What a call whose claim lost gets, given the intent that holds its key or its operation."""
    if found.key == mine.key and found.fingerprint == mine.fingerprint:
        if found.status == "in_flight":
            return Claim("wait", found)
        if found.status in ("done", "failed"):
            return Claim("replay", found)
        return Claim("refuse", found, outcome_unknown(found.key))
    if found.status == "done":
        return Claim("refuse", found, NeedsClarification(
            f"This {found.tool} was already done with different arguments.",
            code="ALREADY_DONE_DIFFERENT_ARGS",
            hint="Ask the person: is this a second, separate action, or a change to the first one? Do not call "
                 "again until they answer.",
            state={"idempotency_key": found.key, "status": found.status},
            idempotency_key=found.key,
        ))
    return Claim("refuse", found, Conflict(
        f"An earlier {found.tool} for the same operation is still unresolved ({found.status}).",
        code="UNRESOLVED_OPERATION",
        hint="Nothing was done. Do not change the arguments and retry; a person reconciles the earlier attempt "
             "first.",
        state={"idempotency_key": found.key, "status": found.status},
        idempotency_key=found.key,
    ))


def repeat_without_conversation(found: Intent) -> NeedsClarification:
    """An identical write from a call naming no conversation: a resend, or a second one? Only a person knows."""
    at = datetime.fromtimestamp(found.created_at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    summary = outcome_summary(found.outcome)
    return NeedsClarification(
        f"An identical {found.tool} (same principal, tool and operation arguments) was already made at {at} "
        f"(key {found.key}, {found.status}: {summary}). This call names no conversation, so a resend cannot be "
        "told from a second, separate one; nothing was done.",
        code="REPEAT_WITHOUT_CONVERSATION",
        hint=f"Ask the person whether they want a second, separate {found.tool}. Only if they confirm, the calling "
             "code repeats the call with the next occurrence: CallContext(occurrence=1) for a second one (over "
             "MCP, _meta \"dev.toolproof/occurrence\": 1). Passing the conversation (CallContext(conversation_id="
             "...), _meta \"dev.toolproof/conversation_id\") lets resends be recognised as resends.",
        state={"idempotency_key": found.key, "status": found.status, "at": at, "summary": summary},
        idempotency_key=found.key,
    )


def outcome_summary(outcome: Any, limit: int = 160) -> str:
    """A short text of a stored (already redacted) outcome: the result's JSON, or the error's class and code."""
    stored = outcome if isinstance(outcome, Mapping) else {}
    error = stored.get("error")
    if isinstance(error, Mapping):
        return f"{error.get('class')} {error.get('code')}"
    text = json.dumps(stored.get("result"), sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def in_flight_conflict(found: Intent) -> Conflict:
    return Conflict(
        f"The same {found.tool} is still running in another worker.",
        code="IN_FLIGHT",
        hint="Nothing new was done. Re-read the state (e.g. the order status) before deciding anything.",
        state={"idempotency_key": found.key, "status": found.status},
        idempotency_key=found.key,
    )


def outcome_unknown(key: str) -> OutcomeUnknown:
    return OutcomeUnknown(
        "An earlier attempt of this write may or may not have been applied; it was not sent again.",
        code="OUTCOME_UNKNOWN",
        hint=UNKNOWN_HINT,
        idempotency_key=key,
    )


def worker_of(owner: str) -> tuple[str | None, int | None]:
    """(host, pid) from a journal owner `host:pid:nonce` (None for an owner named otherwise)."""
    parts = owner.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return parts[0], int(parts[1])
    return None, None


def lost_worker_stop(found: Intent, now: float) -> StopRecord:
    """The stop record of a write whose worker died holding its claim (the lease ran out unsettled): what,
    which key, which worker, and what the operator does. Its id is a digest of the claim (key, owner, time),
    so every observer derives the same record."""
    host, pid = worker_of(found.owner)
    worker = f"pid {pid} on {host}" if pid is not None else found.owner
    digest = hashlib.sha256(f"{found.key}\0{found.owner}\0{found.created_at!r}".encode()).hexdigest()[:24]
    resolve = f"toolproof journal resolve {found.key} --done|--not-done"
    return StopRecord(
        id=digest, at=now, tool=found.tool, call_id=found.call_id or found.key, arguments=found.arguments,
        error_class=str(ErrorClass.OUTCOME_UNKNOWN), code="WORKER_LOST",
        message=(f"The worker running {found.tool} (key {found.key}, operation {found.operation_id}), {worker}, "
                 f"stopped before settling it: its lease ended at {utc_timestamp(found.lease_until)}, so the write "
                 f"may or may not have taken effect; it will not be sent again. Check {found.tool}'s own system "
                 f"for this key, then run `{resolve}`."),
        attempts=1, effect_status="unknown", reason="worker_lost", conversation_id=found.conversation_id,
        idempotency_key=found.key,
        extra={"owner": found.owner, "host": host, "pid": pid, "operation_id": found.operation_id,
               "claimed_at": found.created_at, "lease_until": found.lease_until, "principal": found.principal,
               "next": resolve},
    )


#: What a late attempt's settlement says it did (`failed`: some of it happened).
_LATE_EFFECT: Final[Mapping[Settlement, EffectStatus]] = {
    "done": "done", "failed": "done", "release": "not_done", "unknown": "unknown"}


def fenced_stop(intent: Intent, envelope: Envelope, how: Settlement, secrets: list[str], now: float) -> StopRecord:
    """A settle the journal refused, since the claim is no longer this worker's (its lease lapsed, or another
    worker took the key over): what this worker's attempt ended in, kept as evidence beside the owner's entry,
    never over it."""
    error = envelope.error
    said = "succeeded" if error is None else f"ended in {error.error_class} {error.code}"
    return StopRecord(
        id=new_call_id(), at=now, tool=intent.tool, call_id=intent.call_id or envelope.meta.call_id,
        arguments=intent.arguments, error_class=str(ErrorClass.OUTCOME_UNKNOWN), code="FENCED",
        message=(f"A worker whose claim on {intent.tool} (key {intent.key}, token {intent.fence}) had lapsed or "
                 f"been taken over finished its attempt: it {said}. The journal kept the current entry; this "
                 "record keeps what the late attempt said. Check the tool's own system for a second effect "
                 "(a store that checks the fencing token refused it)."),
        attempts=envelope.meta.attempts, effect_status=_LATE_EFFECT[how], reason="fenced",
        conversation_id=intent.conversation_id, idempotency_key=intent.key,
        extra={"owner": intent.owner, "fence": intent.fence, "settlement": how,
               "evidence": stored_outcome(envelope, secrets)},
    )


def unavailable_cause(exc: BaseException) -> str:
    """The class of a store failure, as an operator names it: `connection refused`, `timeout`, `file replaced`..."""
    if isinstance(exc, StoreUnavailable):
        return exc.cause
    text = f"{type(exc).__name__} {exc}".lower()
    for needle, cause in (("refused", "connection refused"), ("timeout", "timeout"), ("timed out", "timeout"),
                          ("locked", "locked"), ("closed", "closed")):
        if needle in text:
            return cause
    return "connection lost" if isinstance(exc, ConnectionError) else "error"


def journal_unavailable(exc: BaseException, store: str = "", waited_s: float | None = None) -> TransientUpstream:
    """JOURNAL_UNAVAILABLE saying what happened: which store (its URL through the one redaction), the cause
    class and how long the claim waited; the same words reach the stop record."""
    where = redact_text(store) if store else "the store"
    cause = unavailable_cause(exc)
    waited = "an unmeasured time" if waited_s is None else f"{waited_s:.1f} s"
    if isinstance(exc, StoreUnavailable) and cause.startswith("file "):
        what = redact_text(str(exc))
    elif cause == "connection refused":
        what = f"connections refused for {waited} at {where}"
    elif cause == "timeout":
        what = f"no connection within {waited} at {where} (timeout)"
    elif cause == "locked":
        what = f"the database at {where} stayed locked for {waited}"
    elif cause == "closed":
        what = f"the store at {where} is closed"
    else:
        what = f"{redact_text(f'{type(exc).__name__}: {exc}')[:300]} at {where} after {waited}"
    return TransientUpstream(
        f"The write journal could not be reached, so the write was not sent: {what}.",
        code="JOURNAL_UNAVAILABLE",
        hint="Nothing was done: the write was not sent.",
        state={"store": where, "cause": cause, "waited_s": None if waited_s is None else round(waited_s, 3)},
    )


#: How a dispatched write's intent settles, by what its error says of the effect (`effect_fact`): nothing
#: happened -> released (a later call may proceed); it may have -> `unknown` (never sent again blind); some
#: of it happened -> `failed` (the answer is kept and replayed; a person re-reads).
SETTLEMENTS: Final[Mapping[EffectFact, Settlement]] = {
    EffectFact.NONE: "release", EffectFact.MAYBE: "unknown", EffectFact.SOME: "failed"}


def settlement(error: ErrorInfo, tool: Tool, *, dispatched: bool) -> Settlement:
    """The journal's half of the effect rule: `SETTLEMENTS` of the error's fact; an idempotent tool's unknown is
    released instead (its owner enforces the key, so a retry re-sends it safely)."""
    how = SETTLEMENTS[effect_fact(error.error_class, error.effect_done, dispatched=dispatched)]
    return "release" if how == "unknown" and tool.idempotent else how


def settle(intent: Intent, tool: Tool, envelope: Envelope, *, dispatched: bool = True) -> tuple[Settlement, Envelope]:
    """How a write's envelope settles its intent, and the envelope the caller gets: with the key wherever the
    write's fate is bound to it (unknown, kept, or an idempotent write's retry that re-sends it). A write that
    was never dispatched (refused by its breaker, say) did nothing."""
    m, error = envelope.meta, envelope.error
    meta = Meta(m.tool, m.call_id, m.schema_version, m.attempts, intent.key, m.replayed, m.extra)
    if envelope.ok or error is None:
        return "done", Envelope(envelope.ok, meta, envelope.result, error)
    fact = effect_fact(error.error_class, error.effect_done, dispatched=dispatched)
    how = settlement(error, tool, dispatched=dispatched)
    if fact is EffectFact.NONE:
        return how, Envelope(envelope.ok, meta, envelope.result, error)
    if how == "unknown" and error.error_class is not ErrorClass.OUTCOME_UNKNOWN:
        return how, Envelope.failure(failed_after_dispatch(error.to_exception(), idempotency_key=intent.key), meta)
    return how, Envelope(envelope.ok, meta, envelope.result, replace(error, idempotency_key=intent.key))


def stored_outcome(envelope: Envelope, secrets: list[str]) -> dict[str, Any]:
    """What is stored and replayed to repeats: the envelope without its meta, secrets redacted (by name, and
    the call's own secret values wherever the result or the error repeats them)."""
    # Built here rather than `to_dict()` less its meta: the same members in the same order, one dict fewer.
    if envelope.ok:
        data: dict[str, Any] = {"ok": True, "result": envelope.result, "attempts": envelope.meta.attempts}
    else:
        assert envelope.error is not None
        data = {"ok": False, "error": envelope.error.to_dict(), "attempts": envelope.meta.attempts}
    stored: dict[str, Any] = redact_values(redact(data), secrets)
    return stored


def replay_envelope(found: Intent, tool: Tool, call_id: str) -> Envelope:
    """The stored envelope of a finished intent, under this call's id, marked as replayed, with the call that
    ran and when (`replayed_from`), so no one takes a stored answer for a fresh one; repaired when it no longer
    validates (see `repaired`)."""
    stored = found.outcome if isinstance(found.outcome, dict) else {"ok": True, "result": found.outcome}
    stored = {k: v for k, v in stored.items() if k != "attempts"}
    original = {"replayed_from": {"call_id": found.call_id, "at": utc_timestamp(found.created_at)}}
    meta = Meta(tool.name, call_id, tool.schema_version, 0, idempotency_key=found.key, replayed=True, extra=original)
    try:
        return Envelope.from_dict({**stored, "meta": meta.to_dict()})
    except MalformedEnvelope:
        return repaired(stored, found.key, meta)


def repaired(stored: Mapping[str, Any], key: str, meta: Meta) -> Envelope:
    """A stored outcome that fails the published schema (written before a fix, or edited by hand) is
    re-derived, never fatal: an error keeps its class and text through the checks every raised error
    passes; a success keeps its result as plain JSON; anything else says the outcome cannot be read."""
    error = stored.get("error")
    if isinstance(error, Mapping):
        info = ErrorInfo.from_fields(error.get("class"), {**error, "idempotency_key": key})
        return Envelope.failure(info, meta)
    if stored.get("ok") is True:
        try:
            return Envelope.success(plain_json(stored.get("result")), meta)
        except NotPlainJson:
            pass
    return Envelope.failure(InternalError(
        "This write finished earlier, but its stored outcome cannot be read; it was not sent again.",
        code="STORED_OUTCOME_UNREADABLE", idempotency_key=key,
        hint="Do not call again; a person checks the journal entry (`toolproof journal show`)."), meta)


def _with_extra(envelope: Envelope, **extra: Any) -> Envelope:
    return replace(envelope, meta=replace(envelope.meta, extra={**envelope.meta.extra, **extra}))


__all__ = ["HEARTBEAT_LEASE_S", "SETTLEMENTS", "Claim", "FinishStatus", "Journal", "decide", "settle", "settlement"]
