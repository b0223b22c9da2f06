"""The error contract: a closed set of classes, each fixing `retryable` and the default `next_action`.

The model reads the class and the action and knows what to do next; the orchestrator reads the same two
fields and knows whether it may retry. Classes are added compatibly and retired by no longer emitting
them, never removed (the enum is versioned like a schema-registry entry: `CONTRACT_VERSION`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, ClassVar, Final

CONTRACT_VERSION: Final = "1.0.0"


class ErrorClass(StrEnum):
    """What went wrong, from the point of view of whoever must act next."""

    INVALID_ARGUMENT = "invalid_argument"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    RATE_LIMITED = "rate_limited"
    TRANSIENT_UPSTREAM = "transient_upstream"
    AUTH_FAILED = "auth_failed"
    PERMISSION_DENIED = "permission_denied"
    PARTIAL_EXECUTION = "partial_execution"
    NEEDS_CLARIFICATION = "needs_clarification"
    OUTCOME_UNKNOWN = "outcome_unknown"
    INTERNAL_ERROR = "internal_error"


class NextAction(StrEnum):
    """What the reader of the envelope should do next."""

    REPAIR = "repair"
    RETRY = "retry"
    REREAD = "reread"
    ASK_PERSON = "ask_person"
    ESCALATE = "escalate"


class EffectFact(StrEnum):
    """What a failed write did to the world, as far as the error can say (`CLASS_SPECS[...].effect`).

    The journal's settlement, the stop record's effect and the write rule of the classifier are all read off
    this one fact (`effect_fact`), so they cannot disagree.
    """

    NONE = "none"  # nothing happened: a corrected or later call may proceed
    MAYBE = "maybe"  # it may or may not have happened: never sent again blind, a person (or a check) settles it
    SOME = "some"  # some of it happened: the answer is kept and replayed, a person re-reads before writing again


@dataclass(frozen=True, slots=True)
class ClassSpec:
    """The fixed properties of one error class."""

    retryable: bool
    next_action: NextAction
    description: str
    http_status: int
    effect: EffectFact  # what the error says of a dispatched write's effect when its raiser says nothing


CLASS_SPECS: Final = MappingProxyType(
    {
        ErrorClass.INVALID_ARGUMENT: ClassSpec(
            False,
            NextAction.REPAIR,
            "An argument is wrong. Correct the field named in `field` as `hint` says and call again once.",
            422,
            EffectFact.NONE,
        ),
        ErrorClass.NOT_FOUND: ClassSpec(
            False,
            NextAction.REPAIR,
            "The thing named does not exist. Look it up with the tool the hint names, or ask the person.",
            404,
            EffectFact.NONE,
        ),
        ErrorClass.CONFLICT: ClassSpec(
            False,
            NextAction.REREAD,
            "The state changed or is locked. Re-read it with a read tool, then plan again.",
            409,
            EffectFact.NONE,
        ),
        ErrorClass.RATE_LIMITED: ClassSpec(
            True,
            NextAction.RETRY,
            "Too many requests. Do not change the arguments; wait `retry_after_s`; the orchestrator retries.",
            429,
            EffectFact.NONE,
        ),
        ErrorClass.TRANSIENT_UPSTREAM: ClassSpec(
            True,
            NextAction.RETRY,
            "A service the tool needs failed for now. Do not change the arguments; the orchestrator retries.",
            503,
            EffectFact.MAYBE,
        ),
        ErrorClass.AUTH_FAILED: ClassSpec(
            False,
            NextAction.ESCALATE,
            "Credentials are missing or invalid. Do not call again; tell a person.",
            401,
            EffectFact.NONE,
        ),
        ErrorClass.PERMISSION_DENIED: ClassSpec(
            False,
            NextAction.ESCALATE,
            "This action is not allowed. Do not retry it just in case; tell a person.",
            403,
            EffectFact.NONE,
        ),
        ErrorClass.PARTIAL_EXECUTION: ClassSpec(
            False,
            NextAction.REREAD,
            "Some effects happened (`state` says which). Re-read before any further write.",
            500,
            EffectFact.SOME,
        ),
        ErrorClass.NEEDS_CLARIFICATION: ClassSpec(
            False,
            NextAction.ASK_PERSON,
            "The request is valid but ambiguous. Ask the person the question in `hint`.",
            422,
            EffectFact.NONE,
        ),
        ErrorClass.OUTCOME_UNKNOWN: ClassSpec(
            False,
            NextAction.ESCALATE,
            "A write may or may not have run. Never retry it blind; a person reconciles `idempotency_key`.",
            504,
            EffectFact.MAYBE,
        ),
        ErrorClass.INTERNAL_ERROR: ClassSpec(
            False,
            NextAction.ESCALATE,
            "The tool failed unexpectedly. Do not call again; tell a person.",
            500,
            EffectFact.MAYBE,
        ),
    }
)

ACTION_DESCRIPTIONS: Final = MappingProxyType(
    {
        NextAction.REPAIR: "Correct the arguments as the error says and call the same tool again, once.",
        NextAction.RETRY: "Do not change the arguments; the orchestrator will retry after the delay.",
        NextAction.REREAD: "Re-read the current state with a read tool before any further write, then replan.",
        NextAction.ASK_PERSON: "Ask the person the question in `hint`; do not guess.",
        NextAction.ESCALATE: "Stop calling this tool for this request and hand over to a person.",
    }
)

TRANSIENT_CLASSES: Final = frozenset({ErrorClass.RATE_LIMITED, ErrorClass.TRANSIENT_UPSTREAM})

_CODE_RE: Final = re.compile(r"^[A-Z][A-Z0-9_]*$")


def effect_fact(error_class: ErrorClass, effect_done: bool | None, *, dispatched: bool) -> EffectFact:
    """The one rule for what a failed call did: nothing when it was never dispatched or its raiser says so
    (`effect_done=False`), some when its raiser says it happened (`effect_done=True`), else its class's fact.

    A body's unexpected exception after dispatch is `internal_error`, whose fact is MAYBE: the body may have
    committed before it raised, and toolproof cannot tell, so the write is `unknown` until someone checks.
    """
    if not dispatched or effect_done is False:
        return EffectFact.NONE
    if effect_done is True:
        return EffectFact.SOME
    return CLASS_SPECS[error_class].effect


def spec(error_class: ErrorClass | str) -> ClassSpec:
    """The fixed properties of a class, by enum or wire name."""
    return CLASS_SPECS[ErrorClass(error_class)]


class ToolError(Exception):
    """Raise one of its subclasses from a tool to return a structured, model-facing error.

    The message is shown to the model: write it for a reader who cannot see your code.
    """

    error_class: ClassVar[ErrorClass] = ErrorClass.INTERNAL_ERROR
    default_code: ClassVar[str] = "INTERNAL_ERROR"

    def __init_subclass__(cls, error_class: ErrorClass | None = None, **kwargs: Any) -> None:
        """`class NotFound(ToolError, error_class=ErrorClass.NOT_FOUND)`: the class, and its name as the code
        (a subclass of a subclass keeps both unless it says otherwise, as `ToolTimeout` does with its code)."""
        super().__init_subclass__(**kwargs)
        if error_class is not None:
            cls.error_class = error_class
            if "default_code" not in cls.__dict__:
                cls.default_code = error_class.value.upper()

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        received: Any = None,
        allowed_values: list[Any] | None = None,
        hint: str | None = None,
        retry_after_s: float | None = None,
        state: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        effect_done: bool | None = None,
    ) -> None:
        """`effect_done` tells the orchestrator what the raiser knows of the side effect: False when nothing
        was sent (e.g. the upstream could not be reached), True when it happened, None when unknown."""
        super().__init__(message)
        code = code or self.default_code
        if not _CODE_RE.match(code):
            raise ValueError(f"error code must be UPPER_SNAKE, got {code!r}")
        if retry_after_s is not None and not retry_after_s >= 0:
            raise ValueError("retry_after_s must be a non-negative number")
        self.message = message
        self.code = code
        self.field = field
        self.received = received
        self.allowed_values = allowed_values
        self.hint = hint
        self.retry_after_s = retry_after_s
        self.state = state
        self.idempotency_key = idempotency_key
        self.effect_done = effect_done

    @property
    def retryable(self) -> bool:
        return CLASS_SPECS[self.error_class].retryable

    @property
    def next_action(self) -> NextAction:
        return CLASS_SPECS[self.error_class].next_action

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class InvalidArgument(ToolError, error_class=ErrorClass.INVALID_ARGUMENT):
    """The arguments break a rule the schema cannot say (name `field`, and what is `allowed_values`)."""


class NotFound(ToolError, error_class=ErrorClass.NOT_FOUND):
    """What the arguments name does not exist (an id, a file, a customer)."""


class Conflict(ToolError, error_class=ErrorClass.CONFLICT):
    """The request clashes with the current state (a version moved on, a slot was taken)."""


class RateLimited(ToolError, error_class=ErrorClass.RATE_LIMITED):
    """The upstream asks to slow down; give `retry_after_s` when it says how long."""


class TransientUpstream(ToolError, error_class=ErrorClass.TRANSIENT_UPSTREAM):
    """The upstream failed in a way that passes (a 503, a restart); nothing was done."""


class ToolTimeout(TransientUpstream):
    """The tool (or its upstream) did not answer in time. Recognised by type: a retry after a timeout costs
    more of the retry quota, and a write that timed out after it was sent becomes `outcome_unknown`."""

    default_code = "TIMEOUT"


class ConnectionLost(TransientUpstream):
    """The connection to the upstream failed or closed: the call may not have been heard, or its reply lost."""

    default_code = "CONNECTION_ERROR"


class AuthFailed(ToolError, error_class=ErrorClass.AUTH_FAILED):
    """The tool's own credentials were refused (expired, revoked): a person must fix them."""


class PermissionDenied(ToolError, error_class=ErrorClass.PERMISSION_DENIED):
    """The caller may not do this; asking again will not change it."""


class PartialExecution(ToolError, error_class=ErrorClass.PARTIAL_EXECUTION):
    """Some effects happened and some did not; `state` says which."""


class NeedsClarification(ToolError, error_class=ErrorClass.NEEDS_CLARIFICATION):
    """The request is valid but ambiguous; `hint` holds the question for the person."""


class OutcomeUnknown(ToolError, error_class=ErrorClass.OUTCOME_UNKNOWN):
    """A write may or may not have run; a person reconciles it by its `idempotency_key`."""


class InternalError(ToolError, error_class=ErrorClass.INTERNAL_ERROR):
    """The tool failed unexpectedly (its own bug); do not call again."""


ERROR_TYPES: Final = MappingProxyType(
    {
        cls.error_class: cls
        for cls in (
            InvalidArgument,
            NotFound,
            Conflict,
            RateLimited,
            TransientUpstream,
            AuthFailed,
            PermissionDenied,
            PartialExecution,
            NeedsClarification,
            OutcomeUnknown,
            InternalError,
        )
    }
)


class UnknownTool(LookupError):
    """A call named a tool the toolset does not have: a protocol error, not a tool result."""

    def __init__(self, name: str, known: list[str] | None = None) -> None:
        self.name = name
        self.known = known or []
        shown = name if len(name) <= 80 else name[:80] + "…"
        super().__init__(f"unknown tool {shown!r}")


class DefinitionError(ValueError):
    """A tool definition breaks the contract (raised at definition time, never at call time)."""
