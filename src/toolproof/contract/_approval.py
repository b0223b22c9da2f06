"""Approval before risky actions: which calls a person must approve, and the error the model gets meanwhile.

A tool's `approval=` is "always", "never" (the same as None) or a policy: a function of the validated
arguments and the `CallContext` that returns why the call must wait for a person (a string, or True), or
None/False to let it run. The gate itself is a pipeline stage; the requests live in the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

from ._context import CallContext
from ._errors import DefinitionError, NeedsClarification, PermissionDenied

#: A policy: why this call needs a person's approval (a reason, or True), or None/False when it does not.
ApprovalPolicy: TypeAlias = Callable[[Mapping[str, Any], CallContext], "str | bool | None"]
#: What a tool's `approval=` may be.
Approval: TypeAlias = Literal["always", "never"] | ApprovalPolicy | None

ALWAYS_REASON = "this tool always needs a person's approval"


class ApprovalRequired(NeedsClarification):
    """The call is valid and waits for a person's decision; it has not run. The model tells the person and
    stops; it does not retry or rephrase (`needs_clarification`: not retryable, `next_action: ask_person`)."""

    default_code = "APPROVAL_REQUIRED"


class ApprovalRefused(PermissionDenied):
    """A person denied the call, or nobody approved it in time: it did not run and will not run as asked."""

    default_code = "APPROVAL_DENIED"


def check_approval(tool_name: str, approval: Any) -> None:
    """Raise `DefinitionError` unless `approval` is None, "always", "never" or a callable policy."""
    if approval is None or approval in ("always", "never") or callable(approval):
        return
    raise DefinitionError(f"tool {tool_name!r}: approval must be 'always', 'never', None or a function of "
                          f"(arguments, context), got {approval!r}")


def approval_reason(approval: Approval, arguments: Mapping[str, Any], context: CallContext) -> str | None:
    """Why this call must wait for a person, or None when it may run. A policy that raises gates the call
    (fail closed): a broken rule must not wave a risky action through."""
    if approval is None or approval == "never":
        return None
    if approval == "always":
        return ALWAYS_REASON
    assert callable(approval)
    try:
        verdict = approval(arguments, context)
    except Exception as exc:
        return f"the approval policy failed ({type(exc).__name__}), so a person decides"
    if verdict is None or verdict is False:
        return None
    return verdict if isinstance(verdict, str) and verdict.strip() else "the approval policy asked for it"
