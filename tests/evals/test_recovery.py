"""The recovery eval: the seeded-failure library, next-step classification, the fixed loop, per-class scores
and the confusion matrix, on the recorded outputs (authored, not live) and with scripted models."""

from __future__ import annotations

import json

from toolproof import Envelope, ErrorClass, NextAction, PartialExecution
from toolproof.evals import ModelReply, ModelRequest, ReplayModel, ScriptedModel, ToolCall, classify_step, run_recovery
from toolproof.evals._recovery import SeededFailure, coverage, render_error
from toolproof.examples.wholesaler.cases import RECORDED_RECOVERY, new_toolset, old_toolset
from toolproof.examples.wholesaler.cases.library import FAILURES


def test_library_has_three_variants_for_every_class_and_the_edge_cases() -> None:
    counts = coverage(FAILURES)
    assert set(counts) == set(ErrorClass) and min(counts.values()) >= 3
    assert len({f.id for f in FAILURES}) == len(FAILURES)
    clears = next(f for f in FAILURES if f.id == "cf-stock-clears")
    stays = next(f for f in FAILURES if f.id == "cf-stock-stays")
    assert clears.after_reread["available_kg"] == 900.0 and stays.after_reread["available_kg"] == 630.0
    assert clears.followup != stays.followup
    assert all(f.error.state for f in FAILURES if f.error_class is ErrorClass.PARTIAL_EXECUTION)


def test_seeded_errors_are_real_envelopes() -> None:
    failure = next(f for f in FAILURES if f.id == "pe-order-not-notified")
    call = ToolCall("place_order", {"crop": "groundnut"})
    envelope = Envelope.from_json(render_error(failure, call, "call_1", "envelope"))
    assert envelope.error is not None and envelope.error.error_class is ErrorClass.PARTIAL_EXECUTION
    assert envelope.error.next_action is NextAction.REREAD and envelope.error.state == {
        "order_id": 1051, "saved": True, "notified": False}
    assert json.loads(render_error(failure, call, "call_1", "opaque")) == {"error": "Error 500"}


def test_classification_of_the_next_step() -> None:
    ts = new_toolset()
    first = ToolCall("place_order", {"crop": "onion", "quantity_kg": 4})
    assert classify_step(first, ModelReply((ToolCall("place_order", {"crop": "onion", "quantity_kg": 4}),)),
                         ts) == "retry"
    assert classify_step(first, ModelReply((ToolCall("place_order", {"crop": "onion", "quantity_kg": 400}),)),
                         ts) == "repair"
    assert classify_step(first, ModelReply((ToolCall("check_stock", {"crop": "onion"}),)), ts) == "reread"
    assert classify_step(first, ModelReply((ToolCall("cancel_order", {"order_id": 1}),)), ts) == "other"
    assert classify_step(first, ModelReply((), "Which day should we deliver?"), ts) == "ask_person"
    assert classify_step(first, ModelReply((), "I have handed this over to a colleague."), ts) == "escalate"
    assert classify_step(first, ModelReply((), "Sorry, that did not work."), ts) == "escalate"
    assert classify_step(first, ModelReply((ToolCall("place_order", None, "{oops"),)), ts) == "repair"


def test_recorded_new_tools_with_envelopes_against_old_tools_with_opaque_errors() -> None:
    new = run_recovery(FAILURES, new_toolset(), ReplayModel.load(RECORDED_RECOVERY["new"]), label="new")
    old = run_recovery(FAILURES, old_toolset(), ReplayModel.load(RECORDED_RECOVERY["old"]), label="old",
                       error_format="opaque")
    assert new.overall == (31, 35) and old.overall == (13, 35)
    per_class = new.per_class()
    assert per_class["outcome_unknown"] == (2, 3)  # one blind retry of a write that may have run
    assert per_class["needs_clarification"] == (3, 3) and old.per_class()["needs_clarification"] == (0, 3)
    assert new.followup() == (4, 4)
    matrix = new.confusion()
    assert sum(sum(row.values()) for row in matrix.values()) == 35
    assert matrix["escalate"]["retry"] == 1 and matrix["escalate"]["escalate"] == 11
    data = new.to_dict()
    assert set(data) == {"kind", "model", "toolset", "error_format", "summary", "per_class", "confusion", "results",
                         "partial", "model_errors"}
    assert data["partial"] is False and data["model_errors"]["errors"] == 0
    assert data["summary"]["macro_accuracy"] < 1.0


def test_the_loop_answers_whatever_tool_was_called_and_asks_again() -> None:
    seen: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelReply:
        seen.append(request)
        if request.step == 0:
            return ModelReply((ToolCall("check_stock", {"crop": "onion"}),))
        if request.step == 1:
            return ModelReply((ToolCall("get_order_status", {"order_id": 7}),))
        return ModelReply((), "It is cancelled; the refund is pending.")

    failure = SeededFailure("x", "cancel 7", PartialExecution("half done", state={"cancelled": True}),
                            after_reread={"status": "cancelled"}, followup=frozenset({NextAction.ESCALATE}))
    report = run_recovery([failure], new_toolset(), ScriptedModel("scripted:t", model), system_prompt="sys", runs=2)
    assert [r.step for r in seen] == [0, 0, 1, 1, 2, 2]
    step1 = seen[2].messages
    assert step1[0] == {"role": "system", "content": "sys"}
    assert step1[2]["tool_calls"][0]["function"]["name"] == "check_stock"
    assert json.loads(step1[3]["content"])["error"]["class"] == "partial_execution"
    assert all(r.observed == "reread" and r.ok and r.followup_ok for r in report.results)


def test_no_first_call_is_recorded_as_such() -> None:
    report = run_recovery(FAILURES[:2], new_toolset(), ScriptedModel("s", lambda r: ModelReply((), "hi")))
    assert [r.observed for r in report.results] == ["no_call", "no_call"] and report.overall == (0, 2)
