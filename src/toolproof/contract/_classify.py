"""Turn whatever came back (an HTTP response, a Problem Details body, a Python exception) into a `ToolError`.

The mapping is the contract's, not the upstream's: an HTTP 500 from a payment API and a `ConnectionError`
from a socket both become something the model and the orchestrator know how to act on.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import socket
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal

from ._errors import (
    ERROR_TYPES,
    AuthFailed,
    Conflict,
    ConnectionLost,
    EffectFact,
    ErrorClass,
    InternalError,
    InvalidArgument,
    NotFound,
    OutcomeUnknown,
    PermissionDenied,
    RateLimited,
    ToolError,
    ToolTimeout,
    TransientUpstream,
    effect_fact,
)

Effect = Literal["read", "write"]

#: Retry-After values above this are clamped (urllib3's default: six hours).
RETRY_AFTER_MAX_S: Final = 21600.0

RETRY_HINT: Final = "Do not change the arguments; the orchestrator retries."
UNKNOWN_HINT: Final = "Do not call again. A person checks and reconciles the idempotency key."

_DIGITS: Final = re.compile(r"^\s*[0-9]+\s*$", re.ASCII)
_MAX_TEXT: Final = 500

STATUS_CLASSES: Final[Mapping[int, type[ToolError]]] = {
    400: InvalidArgument,
    401: AuthFailed,
    403: PermissionDenied,
    404: NotFound,
    408: TransientUpstream,
    409: Conflict,
    410: NotFound,
    412: Conflict,
    422: InvalidArgument,
    423: Conflict,
    429: RateLimited,
    500: TransientUpstream,
    502: TransientUpstream,
    503: TransientUpstream,
    504: TransientUpstream,
}


def parse_retry_after(
    value: str | None, *, now: datetime | None = None, max_s: float = RETRY_AFTER_MAX_S
) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date), clamped; None if invalid."""
    if value is None:
        return None
    if _DIGITS.match(value):
        return min(float(int(value)), max_s)
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
    return min(max((when - current).total_seconds(), 0.0), max_s)


def _header(headers: Mapping[str, str] | Iterable[tuple[str, str]] | None, name: str) -> str | None:
    if headers is None:
        return None
    items = headers.items() if isinstance(headers, Mapping) else headers
    lname = name.lower()
    for key, val in items:
        if key.lower() == lname:
            return val
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def _parse_body(body: str | bytes | Mapping[str, Any] | None) -> tuple[Mapping[str, Any] | None, str | None]:
    """(a JSON object body, or None; a short text of the body, or None)."""
    if body is None:
        return None, None
    if isinstance(body, Mapping):
        return body, None
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    stripped = body.strip()
    if stripped.startswith("{") and len(stripped) < 1_000_000:
        try:
            parsed = json.loads(stripped)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            return parsed, None
    return None, _short(stripped) if stripped else None


def classify_http(
    status: int,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    body: str | bytes | Mapping[str, Any] | None = None,
    *,
    now: datetime | None = None,
) -> ToolError:
    """An HTTP error response as a `ToolError` (the brief's table; Problem Details bodies read)."""
    retry_after = parse_retry_after(_header(headers, "Retry-After"), now=now)
    obj, text = _parse_body(body)
    problem_type = "problem+json" in (_header(headers, "Content-Type") or "")
    if obj is not None and (problem_type or _looks_like_problem(obj)):
        exc = classify_problem({**obj, "status": obj.get("status", status)})
        if retry_after is not None and exc.retry_after_s is None:
            exc.retry_after_s = retry_after
        return exc
    cls = _class_for_status(status)
    message = f"HTTP {status}"
    if obj is not None:
        detail = obj.get("message") or obj.get("detail") or obj.get("error")
        if isinstance(detail, str):
            message = f"HTTP {status}: {_short(detail)}"
        elif isinstance(detail, Mapping) and isinstance(detail.get("message"), str):
            message = f"HTTP {status}: {_short(detail['message'])}"
    elif text:
        message = f"HTTP {status}: {text}"
    return cls(message, code=f"HTTP_{status}", retry_after_s=retry_after, hint=_hint_for(cls))


def _class_for_status(status: int) -> type[ToolError]:
    if status in STATUS_CLASSES:
        return STATUS_CLASSES[status]
    if 400 <= status < 500:
        return InvalidArgument
    if status >= 500:
        return TransientUpstream
    return InternalError


def _hint_for(cls: type[ToolError]) -> str | None:
    return {
        RateLimited: "Do not change the arguments; the orchestrator waits and retries.",
        TransientUpstream: RETRY_HINT,
        AuthFailed: "Tell a person: the tool's credentials are not accepted.",
        PermissionDenied: "Tell a person: this action is not allowed for this caller.",
    }.get(cls)


def _looks_like_problem(obj: Mapping[str, Any]) -> bool:
    """RFC 9457 members: a `type`, or a string `title` (alone it still names the problem)."""
    return "type" in obj or isinstance(obj.get("title"), str)


def classify_problem(problem: Mapping[str, Any]) -> ToolError:
    """RFC 9457 Problem Details (from anyone) as a `ToolError`, keeping its extension members."""
    status = problem.get("status")
    ptype = problem.get("type")
    cls: type[ToolError] | None = None
    if isinstance(ptype, str) and ptype.startswith("urn:toolproof:error:"):
        try:
            cls = ERROR_TYPES[ErrorClass(ptype.removeprefix("urn:toolproof:error:"))]
        except ValueError:
            cls = None
    if cls is None:
        cls = _class_for_status(status) if isinstance(status, int) and not isinstance(status, bool) else (
            InternalError
        )
    title = problem.get("title")
    detail = problem.get("detail")
    parts = [p for p in (title, detail) if isinstance(p, str) and p]
    message = _short(": ".join(parts)) if parts else f"HTTP {status}"
    code = problem.get("code")
    if not (isinstance(code, str) and re.fullmatch(r"[A-Z][A-Z0-9_]*", code)):
        code = f"HTTP_{status}" if isinstance(status, int) else cls.default_code
    field = problem.get("field")
    allowed = problem.get("allowed_values")
    retry_after = problem.get("retry_after_s")
    state = problem.get("state")
    hint = problem.get("hint")
    key = problem.get("idempotency_key")
    extensions = {
        k: v
        for k, v in problem.items()
        if k not in {"type", "title", "status", "detail", "instance", "code", "field", "received",
                     "allowed_values", "retry_after_s", "state", "hint", "idempotency_key",
                     "retryable", "next_action", "meta"}
    }
    if not isinstance(state, dict):
        state = extensions or None
    return cls(
        message,
        code=code,
        field=field if isinstance(field, str) else None,
        received=problem.get("received"),
        allowed_values=allowed if isinstance(allowed, list) else None,
        hint=hint if isinstance(hint, str) else _hint_for(cls),
        retry_after_s=float(retry_after)
        if isinstance(retry_after, int | float) and not isinstance(retry_after, bool) and retry_after >= 0
        else None,
        state=state,
        idempotency_key=key if isinstance(key, str) else None,
    )


_TRANSPORT_ERRORS: Final = (ConnectionError, socket.gaierror, EOFError, BrokenPipeError)


def is_transport_failure(exc: BaseException) -> bool:
    """Timeouts and connection failures: the call may not have been heard, or its reply was lost."""
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, *_TRANSPORT_ERRORS)):
        return True
    name = type(exc).__name__
    # httpx / requests / aiohttp transport errors without importing them.
    return name.endswith(("TimeoutException", "ConnectError", "ReadTimeout", "ConnectTimeout",
                          "RemoteProtocolError", "ReadError", "WriteError", "PoolTimeout"))


def classify_exception(exc: BaseException, *, effect: Effect = "read", dispatched: bool = True) -> ToolError:
    """A Python exception as a `ToolError`; the message never carries a traceback, a path or a repr.

    A timeout or connection failure is transient for a read; for a write that was dispatched, the effect
    may have happened, so it is `outcome_unknown` (`failed_after_dispatch`) and never retried blind.
    """
    if isinstance(exc, ToolError):
        return exc
    if is_transport_failure(exc):
        timed_out = isinstance(exc, TimeoutError | asyncio.TimeoutError) or "Timeout" in type(exc).__name__
        error: TransientUpstream = (
            ToolTimeout("The tool timed out.", hint=RETRY_HINT)
            if timed_out
            else ConnectionLost("The tool lost its connection.", hint=RETRY_HINT)
        )
        return failed_after_dispatch(error) if effect == "write" and dispatched else error
    return InternalError(
        "The tool failed unexpectedly.",
        code="UNEXPECTED_EXCEPTION",
        hint="Do not call again; tell a person. Details are in the audit log.",
    )


def may_have_happened(error: ToolError, *, effect: Effect, idempotent: bool) -> bool:
    """The write rule: a failure of a write that may not be repeated, after which its effect may have happened
    (`effect_fact` MAYBE: a transient failure after the send, a body's unexpected exception), is restated as
    outcome_unknown: never retried, never replayed as a plain failure, settled by a person or a check.

    An idempotent write is exempt (its owner enforces the key, so it may be retried like a read), and so is
    an error whose raiser knows nothing was sent (`effect_done=False`).
    """
    if effect != "write" or idempotent or error.error_class is ErrorClass.OUTCOME_UNKNOWN:
        return False
    return effect_fact(error.error_class, error.effect_done, dispatched=True) is EffectFact.MAYBE


def failed_after_dispatch(error: ToolError, *, idempotency_key: str | None = None) -> OutcomeUnknown:
    """The one wording of that rule: the failure, restated as `outcome_unknown` (never retried blind)."""
    if isinstance(error, ToolTimeout):
        code = "TIMEOUT_AFTER_DISPATCH"
    elif isinstance(error, ConnectionLost):
        code = "CONNECTION_LOST_AFTER_DISPATCH"
    else:
        code = "FAILED_AFTER_DISPATCH"
    return OutcomeUnknown(
        f"The write failed after it was sent ({error.code}: {error.message}); it may or may not have been applied.",
        code=code,
        hint=UNKNOWN_HINT,
        idempotency_key=idempotency_key or error.idempotency_key,
        state=error.state,  # what the failure said (an upstream's own words, say) is kept
    )
