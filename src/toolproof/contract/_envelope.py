"""The one result shape every tool call returns, its published JSON Schema, and RFC 9457 Problem Details.

Success: `{"ok": true, "result": ..., "meta": {...}}`; failure: `{"ok": false, "error": {...}, "meta": {...}}`.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache
from typing import Any, Final

import jsonschema_rs

from ._context import EMPTY_MAPPING, empty_mapping
from ._errors import (
    ACTION_DESCRIPTIONS,
    CLASS_SPECS,
    CONTRACT_VERSION,
    ERROR_TYPES,
    ErrorClass,
    NextAction,
    ToolError,
)
from ._plain import NotPlainJson, plain_json
from ._validate import truncate_value
from ._values import value

__all__ = [
    "ENVELOPE_SCHEMA_ID", "PROBLEM_TYPE_PREFIX", "Envelope", "ErrorInfo", "MalformedEnvelope", "Meta",
    "envelope_schema", "from_problem", "plain_error", "success_envelope", "success_envelope_schema", "to_problem",
    "utc_timestamp", "wire_text"
]

ENVELOPE_SCHEMA_ID: Final = "https://toolproof.dev/schemas/envelope/v1.json"
PROBLEM_TYPE_PREFIX: Final = "urn:toolproof:error:"

_META_FIELDS: Final = ("tool", "call_id", "schema_version", "attempts", "idempotency_key", "replayed")


class MalformedEnvelope(ValueError):
    """`Envelope.from_dict` was given something that is not an envelope of this contract."""


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """The `error` member of a failure envelope."""

    error_class: ErrorClass
    code: str
    message: str
    retryable: bool
    next_action: NextAction
    field: str | None = None
    received: Any = None
    allowed_values: list[Any] | None = None
    hint: str | None = None
    retry_after_s: float | None = None
    idempotency_key: str | None = None
    state: dict[str, Any] | None = None
    #: In-process only (not on the wire): what the raiser knew of the side effect (see `ToolError`).
    effect_done: bool | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Accept wire strings ("escalate") as well as the enums; reject anything outside the closed sets.
        if type(self.error_class) is not ErrorClass:
            object.__setattr__(self, "error_class", ErrorClass(self.error_class))
        if type(self.next_action) is not NextAction:
            object.__setattr__(self, "next_action", NextAction(self.next_action))

    def escalated(self) -> ErrorInfo:
        """The same error with `next_action: escalate` (e.g. when the retry budget is spent)."""
        return replace(self, next_action=NextAction.ESCALATE)

    @classmethod
    def from_exception(cls, exc: ToolError) -> ErrorInfo:
        """The error info of a raised `ToolError` (see `from_fields`: a tool may set any attribute to anything)."""
        fields = {name: getattr(exc, name, None) for name in _ERROR_FIELDS}
        if not fields["message"]:
            fields["message"] = str(exc)
        return cls.from_fields(exc.error_class, fields)

    @classmethod
    def from_fields(cls, error_class: Any, fields: Mapping[str, Any]) -> ErrorInfo:
        """Error info with each field made what the published schema says it is, whatever it was given: an
        unknown class is `internal_error`, a bad code the class's own, an object its text, a list `state`
        wrapped as `{"value": [...]}`, a value JSON cannot carry its text. `retryable` and `next_action` are the
        class's. Used for raised errors and to repair stored ones."""
        try:
            error_class = ErrorClass(error_class)
        except ValueError:
            error_class = ErrorClass.INTERNAL_ERROR
        spec = CLASS_SPECS[error_class]
        code = fields.get("code")
        if type(code) is not str or not _CODE_RE.match(code):
            code = ERROR_TYPES[error_class].default_code
        effect_done = fields.get("effect_done")
        return cls(
            error_class=error_class,
            code=code,
            message=wire_text(fields.get("message") or code),
            retryable=spec.retryable,
            next_action=spec.next_action,
            field=_optional_text(fields.get("field")),
            received=_plain_or_text(fields.get("received")),
            allowed_values=_plain_list(fields.get("allowed_values")),
            hint=_optional_text(fields.get("hint")),
            retry_after_s=_delay(fields.get("retry_after_s")),
            idempotency_key=_optional_text(fields.get("idempotency_key")),
            state=_plain_state(fields.get("state")),
            effect_done=effect_done if type(effect_done) is bool else None,
        )

    def to_exception(self) -> ToolError:
        """The `ToolError` this error info describes (the inverse of `from_exception`)."""
        return ERROR_TYPES[self.error_class](
            self.message,
            code=self.code,
            field=self.field,
            received=self.received,
            allowed_values=self.allowed_values,
            hint=self.hint,
            retry_after_s=self.retry_after_s,
            state=self.state,
            idempotency_key=self.idempotency_key,
            effect_done=self.effect_done,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.error_class.value,
            "retryable": self.retryable,
            "next_action": self.next_action.value,
            "code": self.code,
            "message": self.message,
            "field": self.field,
            "received": self.received,
            "allowed_values": self.allowed_values,
            "hint": self.hint,
            "retry_after_s": self.retry_after_s,
            "idempotency_key": self.idempotency_key,
            "state": self.state,
        }


_CODE_RE: Final = re.compile(r"^[A-Z][A-Z0-9_]*$")


def plain_error(exc: ToolError) -> ToolError:
    """A copy of a tool's `ToolError` whose fields are what the contract says they are (see
    `ErrorInfo.from_fields`), so that retry policy and envelopes can read them; its type is kept."""
    info = ErrorInfo.from_exception(exc)
    clean = copy.copy(exc)
    clean.error_class = info.error_class  # type: ignore[misc]  # the instance's, when the tool set a bad one
    for name in _ERROR_FIELDS:
        setattr(clean, name, info.effect_done if name == "effect_done" else getattr(info, name))
    return clean

_ERROR_FIELDS: Final = ("code", "message", "field", "received", "allowed_values", "hint", "retry_after_s",
                        "idempotency_key", "state", "effect_done")


def wire_text(value: Any) -> str:
    """Text for an envelope field: a `str` as it is (a subclass as plain text, a lone surrogate as U+FFFD),
    anything else as its `str()` (or its type name, when even that fails)."""
    if type(value) is str and value.isascii():
        return value
    if not isinstance(value, str):
        try:
            value = str(value)
        except Exception:
            return f"<{type(value).__name__}>"
    text: str = plain_json(str.__str__(value))
    return text


def _optional_text(value: Any) -> str | None:
    return None if value is None else wire_text(value)


def _plain_or_text(value: Any) -> Any:
    """JSON data as it is; what JSON cannot carry as its text (an error must still be shown)."""
    if value is None or (type(value) is str and value.isascii()):
        return value
    try:
        return plain_json(value)
    except NotPlainJson:
        return truncate_value(wire_text(value))


def _plain_list(value: Any) -> list[Any] | None:
    if value is None:
        return None
    plain = _plain_or_text(list(value) if isinstance(value, tuple | set | frozenset) else value)
    return plain if isinstance(plain, list) else [plain]


def _plain_state(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    plain = _plain_or_text(value)
    return plain if isinstance(plain, dict) else {"value": plain}


def _delay(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an int past float's range is no delay anyone can wait
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


@value
@dataclass(frozen=True, slots=True)
class Meta:
    """Facts about the call: which tool, which call, which schema version, how many attempts.

    `extra` carries members added by later parts of the pipeline (e.g. `fallback_from`, `stop_id`, and on a
    replay `replayed_from`: the original call's id and when it ran).
    """

    tool: str
    call_id: str
    schema_version: str | None = None
    attempts: int = 0
    idempotency_key: str | None = None
    replayed: bool = False
    extra: Mapping[str, Any] = dataclasses.field(default_factory=empty_mapping)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tool": self.tool,
            "call_id": self.call_id,
            "schema_version": self.schema_version,
            "attempts": self.attempts,
        }
        if self.idempotency_key is not None:
            out["idempotency_key"] = self.idempotency_key
        if self.replayed:
            out["replayed"] = True
        if self.extra:
            out.update(self.extra)
        return out


def utc_timestamp(at: float) -> str:
    """A unix time as RFC 3339 UTC with milliseconds (`2026-11-30T18:40:00.000Z`): the one time format shown."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@value
@dataclass(frozen=True, slots=True)
class Envelope:
    """One tool result, success or failure, exactly as the model and the orchestrator see it."""

    ok: bool
    meta: Meta
    result: Any = None
    error: ErrorInfo | None = None

    @classmethod
    def success(cls, result: Any, meta: Meta) -> Envelope:
        return cls(ok=True, meta=meta, result=result)

    @classmethod
    def failure(cls, error: ToolError | ErrorInfo, meta: Meta) -> Envelope:
        info = error if isinstance(error, ErrorInfo) else ErrorInfo.from_exception(error)
        return cls(ok=False, meta=meta, error=info)

    @property
    def error_class(self) -> ErrorClass | None:
        return None if self.error is None else self.error.error_class

    def to_dict(self) -> dict[str, Any]:
        if self.ok:
            return {"ok": True, "result": self.result, "meta": self.meta.to_dict()}
        assert self.error is not None
        return {"ok": False, "error": self.error.to_dict(), "meta": self.meta.to_dict()}

    def to_json(self, *, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent, default=str)

    @classmethod
    def from_dict(cls, data: Any) -> Envelope:
        """Parse an envelope, rejecting anything the published schema does not allow."""
        if not isinstance(data, Mapping):
            raise MalformedEnvelope(f"an envelope is a JSON object, not {type(data).__name__}")
        errors = [e.message for e in _envelope_validator().iter_errors(dict(data))]
        if errors:
            raise MalformedEnvelope("; ".join(errors[:5]))
        if not data["ok"]:
            err = data["error"]
            if CLASS_SPECS[ErrorClass(err["class"])].retryable != err["retryable"]:
                raise MalformedEnvelope(f"class {err['class']!r} fixes retryable, got {err['retryable']!r}")
        raw_meta = dict(data["meta"])
        meta = Meta(
            tool=raw_meta.pop("tool"),
            call_id=raw_meta.pop("call_id"),
            schema_version=raw_meta.pop("schema_version", None),
            attempts=raw_meta.pop("attempts", 0),
            idempotency_key=raw_meta.pop("idempotency_key", None),
            replayed=raw_meta.pop("replayed", False),
            extra=raw_meta,
        )
        if data["ok"]:
            return cls(ok=True, meta=meta, result=data.get("result"))
        err = data["error"]
        info = ErrorInfo(
            error_class=ErrorClass(err["class"]),
            code=err["code"],
            message=err["message"],
            retryable=err["retryable"],
            next_action=NextAction(err["next_action"]),
            field=err.get("field"),
            received=err.get("received"),
            allowed_values=err.get("allowed_values"),
            hint=err.get("hint"),
            retry_after_s=err.get("retry_after_s"),
            idempotency_key=err.get("idempotency_key"),
            state=err.get("state"),
        )
        return cls(ok=False, meta=meta, error=info)

    @classmethod
    def from_json(cls, text: str | bytes) -> Envelope:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise MalformedEnvelope(f"not JSON: {exc}") from None
        return cls.from_dict(data)


def success_envelope(tool: str, call_id: str, schema_version: str | None, attempts: int, result: Any,
                     extra: Mapping[str, Any] | None) -> Envelope:
    """`Envelope(True, Meta(tool, call_id, schema_version, attempts, extra=extra), result)`: the envelope of every
    call that ran and succeeded (no key, not replayed), each field given positionally (keywords cost more)."""
    return Envelope(True, Meta(tool, call_id, schema_version, attempts, None, False,
                               EMPTY_MAPPING if extra is None else extra), result, None)


def _class_one_of() -> list[dict[str, Any]]:
    return [
        {
            "const": c.value,
            "description": f"{s.description} retryable={str(s.retryable).lower()}; "
            f"default next_action={s.next_action.value}.",
        }
        for c, s in CLASS_SPECS.items()
    ]


def _action_one_of() -> list[dict[str, Any]]:
    return [{"const": a.value, "description": d} for a, d in ACTION_DESCRIPTIONS.items()]


def envelope_schema(result_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema (2020-12) of the envelope, with the model-facing description of every class and action.

    `result_schema` narrows `result` to one tool's output schema (used for MCP `outputSchema`).
    """
    nullable_str = {"type": ["string", "null"]}
    meta = {
        "type": "object",
        "description": "Facts about the call.",
        "properties": {
            "tool": {"type": "string"},
            "call_id": {"type": "string"},
            "schema_version": nullable_str,
            "attempts": {"type": "integer", "minimum": 0, "description": "Dispatch attempts made."},
            "idempotency_key": nullable_str,
            "replayed": {"type": "boolean", "description": "True when a stored result was replayed."},
            "replayed_from": {
                "type": "object",
                "description": "On a replay: the call that ran, and when. The result is as of then, not fresh.",
                "properties": {
                    "call_id": {**nullable_str, "description": "The call that ran (null if not recorded)."},
                    "at": {"type": "string", "format": "date-time",
                           "description": "When it ran, RFC 3339 UTC."},
                },
                "required": ["call_id", "at"],
                "additionalProperties": False,
            },
        },
        "required": ["tool", "call_id"],
        "additionalProperties": True,
    }
    error = {
        "type": "object",
        "description": "What went wrong and what to do next.",
        "properties": {
            "class": {"type": "string", "oneOf": _class_one_of()},
            "retryable": {"type": "boolean"},
            "next_action": {"type": "string", "oneOf": _action_one_of()},
            "code": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"},
            "message": {"type": "string"},
            "field": {**nullable_str, "description": "The argument at fault; a path for nested fields."},
            "received": {"description": "The value received for `field` (truncated when large)."},
            "allowed_values": {"type": ["array", "null"]},
            "hint": {**nullable_str, "description": "What to do instead, in plain words."},
            "retry_after_s": {"type": ["number", "null"], "minimum": 0},
            "idempotency_key": nullable_str,
            "state": {"type": ["object", "null"], "description": "Which effects happened."},
        },
        "required": ["class", "retryable", "next_action", "code", "message"],
        "additionalProperties": False,
    }
    success = {
        "type": "object",
        "properties": {
            "ok": {"const": True},
            "result": dict(result_schema) if result_schema is not None else {},
            "meta": {"$ref": "#/$defs/meta"},
        },
        "required": ["ok", "meta"] + (["result"] if result_schema is not None else []),
        "additionalProperties": False,
    }
    failure = {
        "type": "object",
        "properties": {
            "ok": {"const": False},
            "error": {"$ref": "#/$defs/error"},
            "meta": {"$ref": "#/$defs/meta"},
        },
        "required": ["ok", "error", "meta"],
        "additionalProperties": False,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": ENVELOPE_SCHEMA_ID,
        "title": "toolproof tool result envelope",
        "description": "Every tool result. Read `ok`; on failure read `error.next_action` and act on it.",
        "x-contract-version": CONTRACT_VERSION,
        "type": "object",
        "oneOf": [success, failure],
        "$defs": {"meta": meta, "error": error},
    }


def success_envelope_schema(result_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The schema of a success envelope only (MCP `outputSchema` describes `structuredContent` on success)."""
    full = envelope_schema(result_schema)
    success = full["oneOf"][0]
    return {
        "type": "object",
        "properties": success["properties"],
        "required": success["required"],
        "$defs": full["$defs"],
    }


@cache
def _envelope_validator() -> Any:
    return jsonschema_rs.validator_for(envelope_schema())


# --- RFC 9457 Problem Details -------------------------------------------------------------------------

_PROBLEM_EXTENSIONS: Final = (
    "code",
    "retryable",
    "next_action",
    "field",
    "received",
    "allowed_values",
    "hint",
    "retry_after_s",
    "idempotency_key",
    "state",
)


def to_problem(envelope: Envelope) -> dict[str, Any]:
    """A failure envelope as RFC 9457 Problem Details (`application/problem+json`), losslessly."""
    if envelope.ok or envelope.error is None:
        raise ValueError("only a failure envelope has a Problem Details form")
    err = envelope.error
    problem: dict[str, Any] = {
        "type": PROBLEM_TYPE_PREFIX + err.error_class.value,
        "title": err.error_class.value.replace("_", " "),
        "status": CLASS_SPECS[err.error_class].http_status,
        "detail": err.message,
        "instance": f"urn:toolproof:call:{envelope.meta.call_id}",
    }
    err_dict = err.to_dict()
    for key in _PROBLEM_EXTENSIONS:
        problem[key] = err_dict[key]
    problem["meta"] = envelope.meta.to_dict()
    return problem


def from_problem(problem: Mapping[str, Any], *, tool: str = "unknown", call_id: str = "") -> Envelope:
    """Problem Details to an envelope: ours round-trip exactly; anyone else's are classified by status."""
    from ._classify import classify_problem  # local: classify imports this module

    ptype = problem.get("type")
    if isinstance(ptype, str) and ptype.startswith(PROBLEM_TYPE_PREFIX):
        candidate = {
            "ok": False,
            "error": {
                "class": ptype.removeprefix(PROBLEM_TYPE_PREFIX),
                "message": problem.get("detail", ""),
                **{k: problem[k] for k in _PROBLEM_EXTENSIONS if k in problem},
            },
            "meta": problem.get("meta") or {"tool": tool, "call_id": call_id},
        }
        try:
            return Envelope.from_dict(candidate)
        except MalformedEnvelope:
            pass
    exc = classify_problem(problem)
    return Envelope.failure(exc, Meta(tool=tool, call_id=call_id))
