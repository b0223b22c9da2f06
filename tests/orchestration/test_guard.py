"""The loop guard on its own: which repeats it refuses, when a failure is forgotten, the per-tool limit."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from toolproof import ErrorInfo
from toolproof.contract._errors import ErrorClass, NextAction
from toolproof.orchestration.guard import LoopGuard


def error(error_class: ErrorClass = ErrorClass.NOT_FOUND, code: str = "NOT_FOUND", **kw: Any) -> ErrorInfo:
    actions = {ErrorClass.NOT_FOUND: NextAction.REPAIR, ErrorClass.CONFLICT: NextAction.REREAD,
               ErrorClass.INVALID_ARGUMENT: NextAction.REPAIR}
    return ErrorInfo(error_class=error_class, code=code, message=f"{code} happened", retryable=False,
                     next_action=actions[error_class], **kw)


def test_an_unknown_scope_lets_every_call_through() -> None:
    assert LoopGuard().check("never-seen", "get_price", {"q": "cumin"}) is None


def test_an_identical_repeat_of_a_remembered_failure_is_refused_and_escalated() -> None:
    guard = LoopGuard()
    first = error(field="q", received="cumin", allowed_values=["jeera"], hint="Try jeera.", retry_after_s=3.0,
                  idempotency_key="k-1")
    guard.failed("run-1", "get_price", {"q": "cumin"}, first, remember=True)
    blocked = guard.check("run-1", "get_price", {"q": "cumin"})
    assert blocked is not None and blocked.reason == "repeat_guard"
    err = blocked.error
    assert err.code == "REPEATED_FAILING_CALL" and err.next_action is NextAction.ESCALATE
    assert err.error_class is ErrorClass.NOT_FOUND and err.retryable is False
    assert (err.field, err.received, err.allowed_values, err.idempotency_key) == ("q", "cumin", ["jeera"], "k-1")
    assert err.retry_after_s is None  # escalated: there is nothing to wait for
    assert err.state == {"first_error_code": "NOT_FOUND"}
    assert "NOT_FOUND" in err.message and err.hint


def test_other_arguments_another_tool_or_another_scope_are_not_repeats() -> None:
    guard = LoopGuard()
    guard.failed("run-1", "get_price", {"q": "cumin"}, error(), remember=True)
    assert guard.check("run-1", "get_price", {"q": "jeera"}) is None
    assert guard.check("run-1", "get_stock", {"q": "cumin"}) is None
    assert guard.check("run-2", "get_price", {"q": "cumin"}) is None


def test_json_text_bytes_and_objects_with_keys_in_any_order_are_the_same_call() -> None:
    guard = LoopGuard()
    guard.failed("s", "book", {"day": "mon", "slot": 9, "who": ["a", "ü"]}, error(), remember=True)
    for same in ('{"who": ["a", "ü"], "slot": 9, "day": "mon"}',
                 b'{"who":["a","\\u00fc"],"slot":9,"day":"mon"}',
                 {"slot": 9, "who": ["a", "ü"], "day": "mon"}):
        assert guard.check("s", "book", same) is not None, same
    assert guard.check("s", "book", {"day": "mon", "slot": 9, "who": ["ü", "a"]}) is None  # list order counts


def test_only_the_last_failure_of_a_tool_is_remembered() -> None:
    guard = LoopGuard()
    guard.failed("s", "get_price", {"q": "a"}, error(), remember=True)
    guard.failed("s", "get_price", {"q": "b"}, error(), remember=True)
    assert guard.check("s", "get_price", {"q": "a"}) is None
    assert guard.check("s", "get_price", {"q": "b"}) is not None


def test_a_failure_not_remembered_clears_the_last_one_but_still_counts() -> None:
    guard = LoopGuard(max_tool_failures=2)
    guard.failed("s", "get_price", {"q": "a"}, error(), remember=True)
    assert guard.failed("s", "get_price", {"q": "a"}, error(), remember=False) is True  # second of two
    blocked = guard.check("s", "get_price", {"q": "a"})
    assert blocked is not None and blocked.reason == "failure_limit"


def test_the_per_tool_limit_escalates_whatever_the_arguments_and_survives_successes() -> None:
    guard = LoopGuard(max_tool_failures=3)
    reached = [guard.failed("s", "get_order", {"id": i}, error(code=f"E{i}"), remember=True) for i in range(3)]
    assert reached == [False, False, True]
    guard.succeeded("s", "get_order", read=True)  # a success does not reset the count of failures
    blocked = guard.check("s", "get_order", {"id": "never tried"})
    assert blocked is not None and blocked.reason == "failure_limit"
    assert blocked.error.code == "TOO_MANY_FAILURES" and blocked.error.next_action is NextAction.ESCALATE
    assert blocked.error.state == {"first_error_code": "E2"}  # the last error seen
    assert "3 times" in blocked.error.message
    assert guard.check("s", "get_stock", {"id": 1}) is None  # per tool
    assert guard.check("other", "get_order", {"id": 1}) is None  # per scope


def test_a_success_of_the_same_tool_forgets_its_failure() -> None:
    guard = LoopGuard()
    guard.failed("s", "place_order", {"q": 40}, error(), remember=True)
    guard.succeeded("s", "place_order", read=False)
    assert guard.check("s", "place_order", {"q": 40}) is None


def test_a_successful_read_clears_reread_failures_only() -> None:
    guard = LoopGuard()
    guard.failed("s", "place_order", {"q": 40}, error(ErrorClass.CONFLICT, "CONFLICT"), remember=True)
    guard.failed("s", "get_price", {"q": "x"}, error(), remember=True)
    guard.succeeded("s", "notify", read=False)  # a write's success re-reads nothing
    assert guard.check("s", "place_order", {"q": 40}) is not None
    guard.succeeded("s", "check_stock", read=True)
    assert guard.check("s", "place_order", {"q": 40}) is None  # the state was re-read: trying again is advised
    assert guard.check("s", "get_price", {"q": "x"}) is not None  # a repair failure stays until repaired


def test_memory_is_bounded_and_the_oldest_scope_goes_first() -> None:
    guard = LoopGuard(max_scopes=2)
    for scope in ("a", "b", "c"):
        guard.failed(scope, "t", {}, error(), remember=True)
    assert guard.check("a", "t", {}) is None
    assert guard.check("b", "t", {}) is not None and guard.check("c", "t", {}) is not None


@pytest.mark.parametrize("kwargs", [{"max_tool_failures": 0}, {"max_scopes": 0}, {"max_tool_failures": -1}])
def test_limits_below_one_are_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=">= 1"):
        LoopGuard(**kwargs)


def _deep(n: int) -> Any:
    value: Any = "x"
    for _ in range(n):
        value = {"q": value}
    return value


def test_arguments_too_deep_to_compare_are_never_called_repeats() -> None:
    guard = LoopGuard()
    deep = _deep(5000)
    guard.failed("s", "t", deep, error(), remember=True)
    assert guard.check("s", "t", deep) is None


@pytest.mark.parametrize(
    "hostile",
    ["{not json", b"\xff\xfe not utf-8", "", "\x00", "ü" * 200_000, {"q": float("nan")}, [1, [2, [3]]], 12, None,
     '"a json string"', {"q\x00": "nul key", "\u202e": "rtl"}],
)
def test_hostile_arguments_are_remembered_exactly_and_nothing_else_matches(hostile: Any) -> None:
    guard = LoopGuard()
    guard.failed("s", "t", hostile, error(ErrorClass.INVALID_ARGUMENT, "WRONG_TYPE"), remember=True)
    assert guard.check("s", "t", hostile) is not None
    assert guard.check("s", "t", {"q": "something else"}) is None


def test_concurrent_failures_are_all_counted() -> None:
    guard = LoopGuard(max_tool_failures=600)
    barrier = threading.Barrier(8)
    reached: list[str] = []  # list.append is atomic

    def hammer(worker: int) -> None:
        barrier.wait()
        for i in range(250):
            scope = f"scope-{i % 3}"
            if guard.failed(scope, "t", {"w": worker, "i": i}, error(), remember=True):
                reached.append(scope)
            guard.check(scope, "t", {"w": worker})
            guard.succeeded(scope, "t", read=True)

    threads = [threading.Thread(target=hammer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # scope-0 saw 8 x 84 failures, the others 8 x 83; every failure from the 600th on reports the limit
    assert {s: reached.count(s) for s in set(reached)} == {"scope-0": 672 - 599, "scope-1": 664 - 599,
                                                           "scope-2": 664 - 599}


def test_the_guard_keeps_a_digest_of_failing_arguments_not_their_text() -> None:
    import tracemalloc

    from toolproof import CallContext, Runner, Tool, Toolset
    from toolproof.contract._errors import NotFound

    def missing(args: dict[str, Any], ctx: CallContext) -> Any:
        raise NotFound("No such item.", code="NO_ITEM")

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}
    guard = LoopGuard()
    r = Runner(Toolset([Tool.from_schema("get_item", "Read an item.", schema, missing, effect="read")]),
               audit=False, loop_guard=guard)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(200):  # 200 scopes, each remembering one failed call with ~300 KB of arguments
            context = CallContext(run_id=f"run-{n}")
            assert r.call_sync("get_item", {"q": f"{n}" + "x" * 300_000}, context=context).error is not None
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 4 * 1024 * 1024, f"{grown / 1e6:.1f} MB kept for 200 scopes"
    blocked = r.call_sync("get_item", {"q": "199" + "x" * 300_000}, context=CallContext(run_id="run-199"))
    assert blocked.error is not None and blocked.error.code == "REPEATED_FAILING_CALL"
