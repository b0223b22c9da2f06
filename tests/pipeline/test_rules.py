"""One home per rule: outcome-unknown has one wording, timeouts are known by type, hints count exactly."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof import CallContext, Runner, Tool, Toolset
from toolproof.contract._classify import UNKNOWN_HINT, classify_exception
from toolproof.contract._envelope import Envelope, ErrorInfo, Meta
from toolproof.contract._errors import ToolTimeout, TransientUpstream
from toolproof.journal._journal import settle
from toolproof.orchestration.policy import RetryPolicy, RetryTokenBucket
from toolproof.pipeline._effects import Clock

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}
NO_WAIT = Clock(lambda: 0.0, lambda s: None)


def raising(exc: Exception) -> Any:
    def handler(args: dict[str, Any], ctx: CallContext) -> None:
        raise exc

    return handler


def runner_for(handler: Any, *, effect: str = "read", **options: Any) -> Runner:
    tool = Tool.from_schema("t", "A tool.", SCHEMA, handler, effect=effect, idempotent=effect == "read" or None)
    return Runner(Toolset([tool]), clock=NO_WAIT, **options)


@pytest.mark.parametrize(("max_attempts", "said"), [(1, "Tried once (no retry)"), (2, "Tried 2 times (1 retry)"),
                                                    (3, "Tried 3 times (2 retries)")])
def test_the_give_up_hint_counts_attempts_and_retries_exactly(max_attempts: int, said: str) -> None:
    runner = runner_for(raising(TransientUpstream("503")), retry=RetryPolicy(max_attempts=max_attempts))
    env = runner.call_sync("t", {"q": "x"})
    assert env.meta.attempts == max_attempts
    assert env.error is not None and env.error.hint is not None and env.error.hint.startswith(said), env.error.hint


@pytest.mark.parametrize(("error", "cost"), [
    (ToolTimeout("The search upstream did not answer.", code="SEARCH_SLOW"), 10),  # a timeout by type, any code
    (TransientUpstream("Upstream said TIMEOUT in its body.", code="UPSTREAM_TIMEOUT"), 5),  # not by its code
])
def test_timeouts_are_recognised_by_type_not_by_code(error: Exception, cost: int) -> None:
    bucket = RetryTokenBucket(capacity=100)
    runner = runner_for(raising(error), retry=RetryPolicy(max_attempts=2), retry_bucket=bucket)
    runner.call_sync("t", {"q": "x"})
    assert bucket.available == 100 - cost


def test_a_timeout_exception_classifies_as_a_tool_timeout() -> None:
    assert isinstance(classify_exception(TimeoutError()), ToolTimeout)
    assert not isinstance(classify_exception(ConnectionError()), ToolTimeout)


def test_a_write_that_failed_after_dispatch_has_one_wording_wherever_the_rule_fires() -> None:
    # 1. a Python timeout classified for a write; 2. the runner, for a write raising a transient error;
    # 3. the journal, settling a transient failure of a write recorded without the runner.
    by_classify = classify_exception(TimeoutError(), effect="write")
    runner = runner_for(raising(TransientUpstream("The card processor answered 503.")), effect="write")
    by_runner = runner.call_sync("t", {"q": "x"}).error
    tool = runner.toolset.get("t")
    intent = runner.store.journal_list()[0]
    lost = Envelope.failure(ErrorInfo.from_exception(TransientUpstream("lost")), Meta("t", "c"))
    how, by_journal = settle(intent, tool, lost)
    assert how == "unknown" and by_runner is not None and by_journal.error is not None
    errors = [ErrorInfo.from_exception(by_classify), by_runner, by_journal.error]
    assert [e.error_class for e in errors] == ["outcome_unknown"] * 3
    assert [e.code for e in errors] == ["TIMEOUT_AFTER_DISPATCH", "FAILED_AFTER_DISPATCH", "FAILED_AFTER_DISPATCH"]
    assert {e.hint for e in errors} == {UNKNOWN_HINT}
    assert all(e.message.startswith("The write failed after it was sent (") for e in errors)
    assert all(e.message.endswith("); it may or may not have been applied.") for e in errors)
