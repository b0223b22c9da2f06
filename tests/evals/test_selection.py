"""The selection eval and the schema harness on the wholesaler's recorded outputs (authored, not live:
see src/toolproof/examples/wholesaler/cases/author_recordings.py), and with a scripted model."""

from __future__ import annotations

from toolproof.evals import ModelReply, ModelRequest, ReplayModel, ScriptedModel, ToolCall, load_cases, run_selection
from toolproof.evals._schema import check_calls
from toolproof.examples.wholesaler.cases import RECORDED, SELECTION_CASES, new_toolset, old_toolset


def test_old_toolset_against_new_on_the_recorded_outputs() -> None:
    cases = load_cases(SELECTION_CASES)
    old = run_selection(cases, old_toolset(), ReplayModel.load(RECORDED["old"]), label="old")
    new = run_selection(cases, new_toolset(), ReplayModel.load(RECORDED["new"]), label="new")
    assert (old.cases_passed.passed, new.cases_passed.passed) == (29, 38)
    assert old.pass_at_1.passed == 86 and new.pass_at_1.passed == 113 and new.pass_at_1.total == 120
    assert (old.pass_hat_k.passed, new.pass_hat_k.passed) == (27, 35)
    # the source article's failure modes show up where they should
    unit = old.per_tag()["unit"]
    assert unit["tool"].value == 1.0 and unit["pass_at_1"].passed == 1  # right tool, 4 instead of 400
    assert ("order", "quantity", "wrong_value", 17) in old.field_failures()
    assert new.per_tag()["unit"]["pass_at_1"].passed == 14  # three date-word misses and one 500 for 50
    assert set(new.shaky) == {"stock-not-price", "history-onion-week", "order-half-tonne-thursday",
                              "order-2-quintal-day-after", "order-next-monday", "order-half-quintal-friday"}
    missed = {r.case_id for r in new.failures() if sum(x.ok for x in new.results if x.case_id == r.case_id) < 2}
    assert missed == {"order-2-quintal-day-after", "order-next-monday"}  # both misses are date words


def test_report_json_has_the_documented_members() -> None:
    cases = load_cases(SELECTION_CASES)
    data = run_selection(cases, new_toolset(), ReplayModel.load(RECORDED["new"]), label="new", runs=1).to_dict()
    assert set(data) == {"kind", "model", "toolset", "runs", "cases", "summary", "per_tag", "field_failures",
                         "shaky", "results", "partial", "model_errors"}
    assert data["partial"] is False and data["summary"]["model_errors"] == {"passed": 0, "total": 40, "rate": 0.0}
    assert data["summary"]["pass_at_1"] == {"passed": 39, "total": 40, "rate": 0.975}
    assert data["shaky"] == []  # one run cannot disagree with itself


def test_schema_harness_finds_the_field_the_failures_cluster_on() -> None:
    cases = load_cases(SELECTION_CASES)
    report = run_selection(cases, new_toolset(), ReplayModel.load(RECORDED["new"]), label="new")
    schema = check_calls([c for r in report.results for c in r.calls], new_toolset())
    assert schema.checked == 120 - 15 + 3  # no-tool replies make no call; the parallel case makes two
    # The strict OpenAI export makes `grade` nullable and the runner reads a null as "not given": no rejections.
    assert ("get_today_price", "grade") not in {(t, f) for t, f, _ in schema.per_field()}
    assert schema.per_field() == [("place_order", "delivery_date", 1)]
    assert "model variance" in schema.diagnosis()[0]
    # Failures piled on one field read as a schema problem.
    bad = ToolCall("place_order", {"crop": "onion", "quantity_kg": "400", "delivery_date": "2026-10-23"})
    good = ToolCall("place_order", {"crop": "onion", "quantity_kg": 400, "delivery_date": "2026-10-23"})
    clustered = check_calls([bad] * 5 + [good] * 3, new_toolset())
    assert clustered.per_field()[0] == ("place_order", "quantity_kg", 5)
    assert "schema problem" in clustered.diagnosis()[0]


def test_scripted_model_sees_the_prompt_with_today_and_the_strict_tools() -> None:
    seen: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelReply:
        seen.append(request)
        if "quintal" in request.messages[-1]["content"]:
            return ModelReply((ToolCall("place_order", {"crop": "onion", "quantity_kg": 400.0,
                                                        "delivery_date": "2026-10-23", "grade": None}),))
        return ModelReply((), "ok")

    cases = load_cases(SELECTION_CASES).select(ids=["order-4-quintal-friday", "thanks", "status-1042"])
    report = run_selection(cases, new_toolset(), ScriptedModel("scripted:test", model), label="new", runs=2)
    assert len(seen) == 6 and "Monday, 2026-10-19" in seen[0].messages[0]["content"]
    assert {t["function"]["name"] for t in seen[0].tools} >= {"place_order", "check_stock"}
    by_case = {r.case_id: r.ok for r in report.results}
    assert by_case == {"order-4-quintal-friday": True, "thanks": True, "status-1042": False}
    status = next(r for r in report.results if r.case_id == "status-1042")
    assert status.errors[0].kind == "wrong_tool" and status.errors[0].received is None


def test_a_missing_recording_is_a_model_error_not_a_crash(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from toolproof.evals._model_errors import TooManyModelErrors

    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"_meta": {"source": "test"}}\n')
    cases = load_cases(SELECTION_CASES).select(ids=["thanks"])
    with pytest.raises(TooManyModelErrors, match=r"1 of 1 model requests got no answer.*nothing recorded"):
        run_selection(cases, new_toolset(), ReplayModel.load(empty), label="new", runs=1)
    report = run_selection(cases, new_toolset(), ReplayModel.load(empty), label="new", runs=1, max_model_errors=None)
    assert not report.results[0].ok and "nothing recorded" in (report.results[0].model_error or "")
    assert report.to_dict()["partial"] is True


def test_demo_runs_old_against_new_offline() -> None:
    from toolproof.examples.wholesaler.cases import run_demo

    reports = run_demo()
    assert reports["selection_old"].cases_passed.passed == 29  # type: ignore[attr-defined]
    assert reports["selection_new"].cases_passed.passed == 38  # type: ignore[attr-defined]
    assert reports["recovery_old"].overall == (13, 35)  # type: ignore[attr-defined]
    assert reports["recovery_new"].overall == (31, 35)  # type: ignore[attr-defined]


def test_broken_recordings_are_model_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from toolproof.evals import ModelError

    for body, message in (('{"case": "a", "calls": [{"arguments": {}}]}', "not a recorded reply"),
                          ("{oops", "not a recorded reply"), ('{"run": 0}', "not a recorded reply")):
        path = tmp_path / "r.jsonl"
        path.write_text(body + "\n")
        with pytest.raises(ModelError, match=message):
            ReplayModel.load(path)
    with pytest.raises(ModelError, match="no recording"):
        ReplayModel.load(tmp_path / "missing.jsonl")


def test_anthropic_without_its_package_says_how_to_install() -> None:
    import asyncio
    import importlib.util

    import pytest

    from toolproof.evals import ModelError, load_model

    model = load_model("anthropic:claude-test")
    request = ModelRequest("c", 0, ({"role": "user", "content": "hi"},), ())
    if importlib.util.find_spec("anthropic") is None:
        with pytest.raises(ModelError, match="pip install anthropic"):
            asyncio.run(model.complete(request))
    else:  # pragma: no cover - the extra is not installed in this environment
        assert model.name == "anthropic:claude-test"
