"""The error contract is exactly the brief's table; every class has one exception type and descriptions."""

from __future__ import annotations

import pytest

import toolproof
from toolproof.contract._errors import ACTION_DESCRIPTIONS, CLASS_SPECS, ERROR_TYPES, ErrorClass, NextAction

BRIEF_TABLE = {
    "invalid_argument": (False, "repair"),
    "not_found": (False, "repair"),
    "conflict": (False, "reread"),
    "rate_limited": (True, "retry"),
    "transient_upstream": (True, "retry"),
    "auth_failed": (False, "escalate"),
    "permission_denied": (False, "escalate"),
    "partial_execution": (False, "reread"),
    "needs_clarification": (False, "ask_person"),
    "outcome_unknown": (False, "escalate"),
    "internal_error": (False, "escalate"),
}

EXPORTED = [
    "InvalidArgument", "NotFound", "Conflict", "RateLimited", "TransientUpstream", "AuthFailed",
    "PermissionDenied", "PartialExecution", "NeedsClarification", "OutcomeUnknown", "InternalError",
]


def test_classes_match_the_brief() -> None:
    assert {c.value for c in ErrorClass} == set(BRIEF_TABLE)
    for cls, (retryable, action) in BRIEF_TABLE.items():
        spec = CLASS_SPECS[ErrorClass(cls)]
        assert spec.retryable is retryable, cls
        assert spec.next_action == action, cls


def test_actions_are_closed_and_described() -> None:
    assert {a.value for a in NextAction} == {"repair", "retry", "reread", "ask_person", "escalate"}
    assert set(ACTION_DESCRIPTIONS) == set(NextAction)
    assert all(len(d) > 20 for d in ACTION_DESCRIPTIONS.values())


def test_retry_descriptions_tell_the_model_not_to_change_arguments() -> None:
    for cls in ("rate_limited", "transient_upstream"):
        assert "Do not change the arguments" in CLASS_SPECS[ErrorClass(cls)].description


@pytest.mark.parametrize("name", EXPORTED)
def test_one_exception_per_class_exported_from_root(name: str) -> None:
    exc_type = getattr(toolproof, name)
    assert issubclass(exc_type, toolproof.ToolError)
    assert ERROR_TYPES[exc_type.error_class] is exc_type
    exc = exc_type("something went wrong", hint="do this")
    assert exc.retryable is BRIEF_TABLE[exc_type.error_class.value][0]
    assert exc.code.isupper()


def test_all_classes_have_an_exception() -> None:
    assert set(ERROR_TYPES) == set(ErrorClass)
    assert len({t.__name__ for t in ERROR_TYPES.values()}) == 11


@pytest.mark.parametrize("code", ["bad_code", "Bad", "1ABC", "A-B", ""])
def test_codes_must_be_upper_snake(code: str) -> None:
    with pytest.raises(ValueError, match="UPPER_SNAKE"):
        toolproof.InvalidArgument("x", code=code or "x")


def test_negative_retry_after_is_refused() -> None:
    with pytest.raises(ValueError, match="retry_after_s"):
        toolproof.RateLimited("slow down", retry_after_s=-1)


def test_unknown_tool_is_not_a_tool_error() -> None:
    assert not issubclass(toolproof.UnknownTool, toolproof.ToolError)


def test_a_subclass_names_its_class_once_and_its_code_follows() -> None:
    from toolproof.contract._errors import ERROR_TYPES, ErrorClass, NotFound, ToolError

    class NoSuchCrop(NotFound):
        """A crop the market does not trade."""

    class Busy(ToolError, error_class=ErrorClass.RATE_LIMITED):
        default_code = "MARKET_BUSY"

    assert (NoSuchCrop.error_class, NoSuchCrop.default_code) == (ErrorClass.NOT_FOUND, "NOT_FOUND")
    busy = Busy("wait")
    assert (busy.error_class, busy.code, busy.retryable) == (ErrorClass.RATE_LIMITED, "MARKET_BUSY", True)
    assert all(cls.default_code == cls.error_class.value.upper() for cls in ERROR_TYPES.values())
