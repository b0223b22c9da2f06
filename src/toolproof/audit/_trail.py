"""The audit trail and stop records: what was called, with what (secrets redacted), and what came of it.

The hot path only appends a small `AuditEntry` to a queue (`AuditWriter.submit`); a background thread turns
the entries into `AuditRecord`s, redacts them and writes them to the store in batches, so a durable store costs
the caller almost nothing; the in-memory store takes each entry as it comes and builds its record when it is
read (`Store.audit_sink`: no thread at all). `AuditWriter.close()` (called by `Runner.close()`) drains the
queue: nothing is lost on a clean shutdown. Stop records are rare and must not be lost: the runner writes them at once.
Also here: stdlib logging (`toolproof.audit`, `toolproof.stops`) and optional OpenTelemetry spans that
follow the GenAI semantic conventions (`pip install 'toolproof[otel]'`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeAlias

from ..contract._context import CallContext
from ..contract._envelope import Envelope, ErrorInfo
from ..contract._errors import EffectFact, ToolError, effect_fact
from ..contract._redaction import redact_arguments, redact_raw, redact_text, secrets_in
from ..stores._base import Store, shown_url
from ..stores._records import AuditRecord, EffectStatus, StopRecord, ValidationOutcome, audit_bytes

if TYPE_CHECKING:
    from ..contract._tool import Tool

__all__ = [
    "DEFAULT_MAX_UNWRITTEN", "MAX_EXCEPTION_MESSAGE", "MAX_TRACEBACK", "AuditEntry", "AuditWriter", "Failure",
    "Hook", "ToolSpans", "build_audit", "build_stop", "developer_exception", "effect_status", "log", "log_stop",
    "new_stop_id", "stop_log", "tool_failure", "tool_log"
]

log: Final = logging.getLogger("toolproof.audit")
stop_log: Final = logging.getLogger("toolproof.stops")
#: A tool's own exception, one WARNING per failed attempt, with the redacted traceback (never the model's).
tool_log: Final = logging.getLogger("toolproof.tools")

#: Bounds on what a record keeps of a tool's exception (characters).
MAX_EXCEPTION_MESSAGE: Final = 2_000
MAX_TRACEBACK: Final = 16_000

Hook: TypeAlias = Callable[[AuditRecord | StopRecord], None]

#: Audit records held while the store is away, at most (about 1 KB each): past it the oldest are dropped.
DEFAULT_MAX_UNWRITTEN: Final = 100_000
#: Bytes of audit records held while the store is away, at most (`records.audit_bytes`): past it the oldest go.
DEFAULT_MAX_UNWRITTEN_BYTES: Final = 64 * 1024 * 1024
#: How often the audit writer repeats that the store is away, while the cause stays the same (seconds).
OUTAGE_LOG_EVERY_S: Final = 60.0


# --- records --------------------------------------------------------------------------------------------

class Failure(NamedTuple):
    """A tool's own exception as its developer needs it: type, message and traceback, redacted and bounded."""

    type: str
    message: str
    traceback: str


def tool_failure(tool: Tool, ctx: CallContext, arguments: Any, exc: BaseException, error: ToolError) -> Failure | None:
    """What the developer must see of the exception a tool raised (None for a deliberate `ToolError` without a
    cause: its envelope says it all), logged once as a WARNING on `toolproof.tools`.

    A `ToolError` raised from another exception keeps that cause: its type and message, and the traceback of
    the whole chain. Redacted by the one redaction plus this call's secret values; bounded in size."""
    shown = developer_exception(exc)
    if shown is None:
        return None
    secrets = secrets_in(arguments, tool.secret_paths)
    failure = Failure(
        _type_name(shown),
        _bounded(redact_text(_message(shown), secrets), MAX_EXCEPTION_MESSAGE),
        _bounded(redact_text("".join(traceback.format_exception(exc)).rstrip("\n"), secrets), MAX_TRACEBACK),
    )
    if tool_log.isEnabledFor(logging.WARNING):
        tool_log.warning("tool %s raised %s (call %s, attempt %d, class %s, code %s)\n%s", tool.name, failure.type,
                         ctx.call_id, ctx.attempt, error.error_class.value, error.code, failure.traceback)
    return failure


def developer_exception(exc: BaseException) -> BaseException | None:
    """The exception to show the developer: the tool's own, or the cause behind a `ToolError` it raised."""
    if not isinstance(exc, ToolError):
        return exc
    if exc.__cause__ is not None:
        return exc.__cause__
    return None if exc.__suppress_context__ else exc.__context__


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a broken __str__ must not hide the failure it describes
        return f"<{_type_name(exc)}: str() failed>"


def _bounded(text: str, limit: int) -> str:
    """At most about `limit` characters: the head and the tail (where the raise site is), the middle cut."""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


class AuditEntry(NamedTuple):
    """What the hot path queues for one attempt; the writer thread turns it into a redacted `AuditRecord`.

    The hot path queues these fields in this order as a plain tuple (`build_audit` takes either): building the
    NamedTuple as well cost 1,800 more instructions a default call (valgrind callgrind, 55.0k -> 53.2k)."""

    at: float  # unix time, seconds
    tool: Tool
    call_id: str | None  # the context's ids, not the context: an entry keeps no object of its own alive
    run_id: str | None
    conversation_id: str | None
    principal: str | None
    idempotency_key: str | None
    arguments: Any  # validated, or as sent when validation failed or was skipped
    validation: ValidationOutcome
    attempt: int
    latency_s: float
    outcome: str  # "ok", "error", "invalid", "not_dispatched"
    error: ToolError | ErrorInfo | None
    failure: Failure | None = None  # the tool's own exception (an "error" attempt only)


_NO_FAILURE: Final = (None, None, None)


def build_audit(entry: tuple[Any, ...]) -> AuditRecord:
    """Turn a queued entry (an `AuditEntry`, or its fields as a tuple) into a redacted `AuditRecord`."""
    at, tool, call_id, run_id, conversation_id, principal, key, arguments, validation, attempt, latency_s, outcome, \
        error, failure = entry
    args = redact_arguments(tool, arguments, validated=validation == "ok")  # skipped: as sent, maybe JSON text
    failing: tuple[str, ...] = ()
    if validation == "failed" and error is not None:
        failing = (error.field or "<arguments>",)
    return AuditRecord(  # its fields in order, positionally (keywords cost more; a test checks the result)
        at, call_id or "", tool.name, tool.schema_version, args, validation, attempt, latency_s * 1000.0,
        outcome, run_id, conversation_id, principal, failing,
        None if error is None else error.error_class.value, None if error is None else error.code,
        key, *(failure or _NO_FAILURE),
    )


def new_stop_id() -> str:
    return "stop_" + os.urandom(8).hex()


#: The stop record's half of the effect rule: what a given-up write did, by its error's `effect_fact`.
EFFECT_STATUS: Final[Mapping[EffectFact, EffectStatus]] = {
    EffectFact.NONE: "not_done", EffectFact.MAYBE: "unknown", EffectFact.SOME: "done"}


def effect_status(tool: Tool, error: ErrorInfo, *, dispatched: bool) -> EffectStatus:
    """Whether the side effect of a call that was given up on is known done, known not done, or unknown (a read
    has none)."""
    if tool.effect == "read":
        return "not_done"
    return EFFECT_STATUS[effect_fact(error.error_class, error.effect_done, dispatched=dispatched)]


def build_stop(
    tool: Tool,
    ctx: CallContext,
    arguments: Any,
    error: ErrorInfo,
    *,
    attempts: int,
    reason: str,
    status: EffectStatus,
    extra: dict[str, Any] | None = None,
    failure: Failure | None = None,
) -> StopRecord:
    """A stop record for a give-up, secrets redacted from the arguments and the message; `failure` is the
    tool's own exception behind it (already redacted by `tool_failure`)."""
    return StopRecord(
        id=new_stop_id(),
        at=time.time(),
        tool=tool.name,
        call_id=ctx.call_id or "",
        arguments=redact_raw(arguments, tool.secret_paths),
        error_class=error.error_class.value,
        code=error.code,
        message=redact_text(error.message, secrets_in(arguments, tool.secret_paths)),
        attempts=attempts,
        effect_status=status,
        reason=reason,
        run_id=ctx.run_id,
        conversation_id=ctx.conversation_id,
        idempotency_key=error.idempotency_key or ctx.idempotency_key,
        extra=extra or {},
        exception_type=None if failure is None else failure.type,
        exception_message=None if failure is None else failure.message,
        traceback=None if failure is None else failure.traceback,
    )


def log_stop(stop: StopRecord) -> None:
    if stop_log.isEnabledFor(logging.WARNING):
        stop_log.warning(
            "gave up on %s (call %s): %s %s after %d attempt(s), reason=%s, effect=%s, stop=%s",
            stop.tool, stop.call_id, stop.error_class, stop.code, stop.attempts, stop.reason,
            stop.effect_status, stop.id,
        )


# --- the background writer --------------------------------------------------------------------------------


class AuditWriter:
    """Batches audit entries and writes them from one background thread; `close()` loses nothing.

    `persist=False` keeps the hooks and logging but writes nothing to the store. A record the store refuses
    (a value it cannot hold) is found by halving the batch, logged, counted in `dropped` and dropped; the
    rest is written. While the store is away the records wait, at most `max_unwritten` of them and
    `max_unwritten_bytes` (the oldest are dropped, counted and logged past that); at `close()` what still
    cannot be written is logged as lost.
    """

    def __init__(
        self,
        store: Store,
        *,
        batch_size: int = 512,
        flush_interval_s: float = 0.25,
        hooks: Sequence[Hook] = (),
        persist: bool = True,
        max_unwritten: int = DEFAULT_MAX_UNWRITTEN,
        max_unwritten_bytes: int = DEFAULT_MAX_UNWRITTEN_BYTES,
    ) -> None:
        self.store = store
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        self.hooks = tuple(hooks)
        self.persist = persist
        self.max_unwritten = max_unwritten
        self.max_unwritten_bytes = max_unwritten_bytes
        self._pending: deque[tuple[Any, ...]] = deque()
        self._unwritten: deque[AuditRecord] = deque()  # built, not yet written: the store was away
        self._unwritten_sizes: deque[int] = deque()
        self._unwritten_bytes = 0
        self._wake = threading.Event()
        self._woken = False  # the wake-up for a full batch was sent and the writer has not taken it yet
        self._write_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.written = 0
        self.failed_batches = 0
        self.dropped = 0  # records the store refused (each alone), or past `max_unwritten` while it was away
        self._outage: str | None = None  # why the store is away now, as last logged
        self._outage_logged_at = 0.0
        # A store in this process's memory takes each entry as it comes and builds its record when read: no
        # thread, no batch (hooks and DEBUG logging see built records, so they keep the writer thread).
        sink = None if hooks or not persist or log.isEnabledFor(logging.DEBUG) else store.audit_sink(build_audit)
        #: Take one attempt's entry (the hot path): the store's sink, or the writer thread's queue.
        self.submit: Callable[[tuple[Any, ...]], None] = self._queue if sink is None else sink

    def _queue(self, entry: tuple[Any, ...]) -> None:
        """Queue one entry (an append, and a wake-up when a batch is full)."""
        pending = self._pending
        pending.append(entry)
        if self._thread is None:
            self._start()
        elif len(pending) >= self.batch_size and not self._woken:
            # Once per batch: until the writer thread gets the GIL (up to the 5 ms switch interval) the queue
            # keeps growing, and setting the event on each of those calls (43% of calls) cost ~0.3 µs a call.
            self._woken = True
            self._wake.set()

    def _start(self) -> None:
        if self._closed:  # used after close(): write inline, nothing waits in a queue no thread drains
            self.flush()
            return
        with self._write_lock:
            if self._thread is not None:
                return
            thread = threading.Thread(target=self._run, name="toolproof-audit", daemon=True)
            self._thread = thread
        thread.start()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self.flush_interval_s)
            self._wake.clear()
            self._woken = False
            self.flush()

    def flush(self) -> int:
        """Write everything queued so far; returns how many records were written."""
        with self._write_lock:
            pending, records = self._pending, list(self._unwritten)
            self._unwritten.clear()
            self._unwritten_sizes.clear()
            self._unwritten_bytes = 0
            while pending:
                try:
                    records.append(build_audit(pending.popleft()))
                except IndexError:  # pragma: no cover - drained concurrently
                    break
            if not records:
                return 0
            where = shown_url(self.store.url)
            if self.persist and self.store.closed:
                log.warning("the store %s was closed before the runner: %d audit records not written "
                            "(close the Runner, not its store)", where, len(records))
                return 0
            if self.persist:
                records, later = self._write(records)
                if later:
                    self.failed_batches += 1
                    self._keep(later, where)
            self.written += len(records)
        self._emit(records)
        return len(records)

    def _write(self, records: list[AuditRecord]) -> tuple[list[AuditRecord], list[AuditRecord]]:
        """(written, left for later because the store is away). A batch the store refuses is halved until each
        refused record stands alone; that one is dropped and the rest flows."""
        try:
            self.store.append_audit(records)
        except Exception as exc:
            if self.store.unreachable(exc):
                self._store_away(len(records), redact_text(f"{type(exc).__name__}: {exc}"))
                return [], records
            if len(records) == 1:
                self.dropped += 1
                log.error("dropped the audit record of call %s (%s): the store %s refuses it: %s",
                          records[0].call_id, records[0].tool, shown_url(self.store.url),
                          redact_text(f"{type(exc).__name__}: {exc}"))
                return [], []
        else:
            self._store_back()
            return records, []
        half = len(records) // 2
        written, later = self._write(records[:half])
        if later:
            return written, later + records[half:]
        more, later = self._write(records[half:])
        return written + more, later

    def _store_away(self, count: int, why: str) -> None:
        """Say once why the store cannot take records (then again when the reason changes, or each
        `OUTAGE_LOG_EVERY_S`), not on every flush: a flush every 0.25 s must not bury the cause in repeats."""
        now = time.monotonic()
        if why != self._outage or now - self._outage_logged_at >= OUTAGE_LOG_EVERY_S:
            log.warning("could not write %d audit records to %s: %s (they wait; said again if the cause changes or "
                        "it lasts another %.0f s)", count, shown_url(self.store.url), why, OUTAGE_LOG_EVERY_S)
            self._outage, self._outage_logged_at = why, now

    def _store_back(self) -> None:
        if self._outage is not None:
            log.warning("audit records are written to %s again", shown_url(self.store.url))
            self._outage = None

    def _keep(self, records: list[AuditRecord], where: str) -> None:
        """Hold records the store could not take now, for the next flush (bounded; nothing after close)."""
        if self._closed:
            self.dropped += len(records)
            log.error("%d audit records not written: %s is unreachable at close", len(records), where)
            return
        for record in records:
            size = audit_bytes(record.arguments, record.exception_message, record.traceback)
            self._unwritten.append(record)
            self._unwritten_sizes.append(size)
            self._unwritten_bytes += size
        excess = 0
        while len(self._unwritten) > self.max_unwritten or self._unwritten_bytes > self.max_unwritten_bytes:
            self._unwritten.popleft()
            self._unwritten_bytes -= self._unwritten_sizes.popleft()
            excess += 1
        if excess > 0:
            self.dropped += excess
            log.error("dropped the %d oldest audit records: %s has been unreachable for %d of them (%d MiB)",
                      excess, where, len(self._unwritten) + excess, self._unwritten_bytes // (1024 * 1024))

    def _emit(self, records: Iterable[AuditRecord]) -> None:
        debug = log.isEnabledFor(logging.DEBUG)
        if not debug and not self.hooks:
            return
        for rec in records:
            if debug:
                log.debug(
                    "%s %s attempt=%d outcome=%s class=%s code=%s exception=%s latency_ms=%.3f call=%s",
                    rec.tool, rec.validation, rec.attempt, rec.outcome, rec.error_class, rec.code,
                    rec.exception_type, rec.latency_ms, rec.call_id,
                )
            for hook in self.hooks:
                try:
                    hook(rec)
                except Exception:
                    log.exception("audit hook %r failed", hook)

    def emit_stop(self, stop: StopRecord) -> None:
        """Tell the hooks and the log about a stop record (written to the store by the runner)."""
        log_stop(stop)
        for hook in self.hooks:
            try:
                hook(stop)
            except Exception:
                log.exception("audit hook %r failed", hook)

    def close(self) -> None:
        """Stop the thread and write what is left. Safe to call twice."""
        self._closed = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread() and thread.is_alive():
            thread.join(timeout=30)
        self._thread = None  # later submits write inline
        self.flush()


# --- OpenTelemetry (optional) ---------------------------------------------------------------------------


class ToolSpans:
    """One `execute_tool {name}` span per call, with the GenAI semantic-convention attributes."""

    def __init__(self, tracer: Any = None) -> None:
        if tracer is None:
            try:
                from opentelemetry import trace
            except ImportError:  # pragma: no cover - depends on the install
                raise ImportError("OpenTelemetry spans need the extra: pip install 'toolproof[otel]'") from None
            tracer = trace.get_tracer("toolproof")
        self.tracer = tracer

    def start(self, tool: Tool, call_id: str) -> tuple[Any, Any]:
        """Start the span and make it current; returns (span, the token to restore the context with)."""
        from opentelemetry import context, trace

        span = self.tracer.start_span(
            f"execute_tool {tool.name}",
            kind=trace.SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool.name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.description": tool.description[:500],
            },
        )
        return span, context.attach(trace.set_span_in_context(span))

    def end(self, span: Any, token: Any, envelope: Envelope | None, exc: BaseException | None = None) -> None:
        from opentelemetry import context
        from opentelemetry.trace import Status, StatusCode

        context.detach(token)

        if envelope is not None:
            span.set_attribute("toolproof.attempts", envelope.meta.attempts)
            if envelope.error is not None:
                span.set_attribute("error.type", envelope.error.error_class.value)
                span.set_attribute("toolproof.error.code", envelope.error.code)
                span.set_attribute("toolproof.next_action", envelope.error.next_action.value)
                span.set_status(Status(StatusCode.ERROR, envelope.error.code))
            stop_id = envelope.meta.extra.get("stop_id")
            if stop_id:
                span.set_attribute("toolproof.stop_id", str(stop_id))
            fallback_from = envelope.meta.extra.get("fallback_from")
            if fallback_from:
                span.set_attribute("toolproof.fallback_from", str(fallback_from))
        elif exc is not None:
            kind = "cancelled" if isinstance(exc, GeneratorExit | asyncio.CancelledError) else type(exc).__qualname__
            span.set_attribute("error.type", kind)
            span.set_status(Status(StatusCode.ERROR, kind))
        span.end()
