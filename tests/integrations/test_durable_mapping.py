"""The class-to-retry mapping of the Temporal activities and the DBOS step's context, without a server: every
class of the contract through `outcome`, as Temporal reads the raised error (retryable or not, its type,
its delay, the envelope it carries). The engines themselves run in tests/e2e/test_temporal.py and test_dbos.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from temporalio.exceptions import ActivityError, ApplicationError, RetryState

from toolproof.contract._envelope import Envelope, ErrorInfo, Meta
from toolproof.contract._errors import CLASS_SPECS, ERROR_TYPES, ErrorClass
from toolproof.integrations.dbos import step_context
from toolproof.integrations.temporal import (
    IN_FLIGHT_TYPE,
    NON_RETRYABLE_TYPES,
    RETRY_POLICY,
    envelope_of_failure,
    outcome,
)

META = Meta("place_order", "c-1", attempts=1, idempotency_key="tp1_x")


def _failure(error_class: ErrorClass, **fields: object) -> Envelope:
    return Envelope.failure(ERROR_TYPES[error_class]("it failed", **fields), META)  # type: ignore[arg-type]


def test_a_success_is_the_activity_result() -> None:
    env = Envelope.success({"order_id": 7}, META)
    assert outcome(env) == env.to_dict()


@pytest.mark.parametrize("error_class", list(ErrorClass))
def test_every_class_raises_as_toolproof_would_retry_it(error_class: ErrorClass) -> None:
    env = _failure(error_class)
    with pytest.raises(ApplicationError) as raised:
        outcome(env)
    err = raised.value
    assert err.type == f"toolproof.{error_class.value}"
    assert err.non_retryable is (not CLASS_SPECS[error_class].retryable)
    assert (err.type in NON_RETRYABLE_TYPES) is err.non_retryable
    assert Envelope.from_dict(err.details[0]) == env  # the envelope travels intact


def test_retry_after_becomes_the_next_retry_delay() -> None:
    with pytest.raises(ApplicationError) as raised:
        outcome(_failure(ErrorClass.RATE_LIMITED, retry_after_s=12.5))
    assert raised.value.next_retry_delay == timedelta(seconds=12.5) and not raised.value.non_retryable


def test_a_write_another_attempt_holds_is_retried_and_outcome_unknown_never() -> None:
    held = Envelope.failure(ErrorInfo.from_fields("conflict", {"code": "IN_FLIGHT", "message": "still running"}), META)
    with pytest.raises(ApplicationError) as raised:
        outcome(held)
    assert not raised.value.non_retryable and raised.value.type == IN_FLIGHT_TYPE
    assert IN_FLIGHT_TYPE not in (RETRY_POLICY.non_retryable_error_types or [])  # the policy retries it too
    with pytest.raises(ApplicationError) as raised:
        outcome(_failure(ErrorClass.OUTCOME_UNKNOWN, idempotency_key="tp1_x"))
    assert raised.value.non_retryable and raised.value.details[0]["error"]["idempotency_key"] == "tp1_x"


def test_an_approval_to_wait_for_is_returned_for_the_workflow_to_wait() -> None:
    from toolproof.contract._approval import ApprovalRequired

    env = Envelope.failure(ApprovalRequired("wait"), Meta("refund", "c-2", extra={"approval_id": "apr_1"}))
    assert outcome(env)["meta"]["approval_id"] == "apr_1"


def test_the_default_policy_bounds_every_class() -> None:
    assert RETRY_POLICY.maximum_attempts == 5
    assert set(RETRY_POLICY.non_retryable_error_types or []) == set(NON_RETRYABLE_TYPES)


def test_a_failure_carrying_no_envelope_reads_as_outcome_unknown() -> None:
    timed_out = ActivityError("activity timed out", scheduled_event_id=1, started_event_id=2, identity="w",
                              activity_type="place_order", activity_id="3", retry_state=RetryState.TIMEOUT)
    env = Envelope.from_dict(envelope_of_failure("place_order", timed_out))
    assert env.error is not None and (env.error.error_class, env.error.code) == (
        ErrorClass.OUTCOME_UNKNOWN, "ACTIVITY_FAILED")


def test_outside_a_dbos_workflow_the_step_names_no_conversation() -> None:
    ctx = step_context("buyer-7")
    assert (ctx.conversation_id, ctx.principal, ctx.metadata) == (None, "buyer-7", {})
