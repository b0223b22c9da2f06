"""Case files: the wholesaler's set loads and fits both toolsets; broken files fail with a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.evals._cases import CaseFileError, check_against_toolset, load_cases, parse_case_set
from toolproof.evals._scoring import Absent, AnyValue, Approx, Options
from toolproof.evals._selection import tool_specs
from toolproof.examples.wholesaler.cases import SELECTION_CASES, new_toolset, old_toolset


def test_wholesaler_case_set_has_the_forty_messages_the_article_describes() -> None:
    cases = load_cases(SELECTION_CASES)
    assert len(cases.cases) == 40
    tags = {t for c in cases.cases for t in c.tags}
    assert {"neighbour", "unit", "date", "no_tool", "hinglish"} <= tags
    assert sum("no_tool" in c.tags for c in cases.cases) >= 5
    prompt = cases.prompt()
    assert prompt is not None and "Monday, 2026-10-19" in prompt and "2026-10-20" in prompt
    quintal = next(c for c in cases.cases if c.id == "order-4-quintal-friday")
    call = quintal.expectation("new").calls[0]
    assert call.tool == "place_order" and call.arguments["quantity_kg"] == Approx(400.0)


def test_case_set_fits_both_toolsets() -> None:
    cases = load_cases(SELECTION_CASES)
    assert check_against_toolset(cases, "new", tool_specs(new_toolset())) == []
    assert check_against_toolset(cases, "old", tool_specs(old_toolset())) == []
    assert check_against_toolset(cases, "new", tool_specs(old_toolset()))  # the wrong toolset is caught


def test_matchers_parse() -> None:
    cs = parse_case_set({"cases": [{"id": "a", "message": "x", "expected": {"tool": "t", "arguments": {
        "a": 1, "b": {"one_of": [1, 2]}, "c": {"approx": 400, "tolerance": 0.5}, "d": {"normalised": "Jeera"},
        "e": {"absent": True}, "f": {"any": True, "optional": True}, "g": {"exact": {"k": 1}}}}}]})
    args = cs.cases[0].expectation("any").calls[0].arguments
    assert args["a"] == Options((1,), normalise_strings=False)
    assert args["b"] == Options((1, 2), normalise_strings=False)
    assert args["c"] == Approx(400.0, 0.5)
    assert args["d"] == Options(("Jeera",), normalise_strings=True)
    assert isinstance(args["e"], Absent) and args["f"] == AnyValue(True)
    assert args["g"] == Options(({"k": 1},), normalise_strings=False)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"cases": []}, "'cases' must be a non-empty list"),
        ({"cases": [{"message": "x", "expected": "no_tool"}]}, "'id' must be a non-empty string"),
        ({"cases": [{"id": "a", "expected": "no_tool"}]}, "give 'message' or a non-empty 'messages'"),
        ({"cases": [{"id": "a", "message": "x"}]}, "'expected' is required"),
        ({"cases": [{"id": "a", "message": "x", "expected": {"tool": "t", "arguments": {"q": {"approx": "x"}}}}]},
         "approx and tolerance must be numbers"),
        ({"cases": [{"id": "a", "message": "x", "expected": {"tool": "t", "arguments": {"q": {"one_of": []}}}}]},
         "one_of needs a non-empty list"),
        ({"cases": [{"id": "a", "message": "x", "expected": {"tool": "t", "argumnts": {}}}]}, "unknown keys"),
        ({"cases": [{"id": "a", "message": "x", "expected": "no_tool"}] * 2}, "duplicate case id 'a'"),
        ({"today": "Thursday", "cases": [{"id": "a", "message": "x", "expected": "no_tool"}]}, "YYYY-MM-DD"),
        ({"system_prompt": "Today is {date}", "cases": [{"id": "a", "message": "x", "expected": "no_tool"}]},
         "may only use"),
        ({"cases": [{"id": "a", "message": "x", "expected": "no_tool", "tags": "x"}]}, "'tags' must be a list"),
        ("just text", "expected a mapping"),
    ],
)
def test_broken_case_files_name_the_problem(data: object, message: str) -> None:
    with pytest.raises(CaseFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_case_set(data, "cases.yaml")


def test_jsonl_with_header_and_bad_lines(tmp_path: Path) -> None:
    good = tmp_path / "c.jsonl"
    good.write_text('{"header": {"today": "2026-10-19", "system_prompt": "Today is {weekday}"}}\n'
                    '{"id": "a", "message": "thank you", "expected": "no_tool", "tags": ["no_tool"]}\n\n')
    cs = load_cases(good)
    assert cs.prompt() == "Today is Monday" and cs.cases[0].expectation("x").no_tool
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "message": "x", "expected": "no_tool"}\n{oops\n')
    with pytest.raises(CaseFileError, match=r"bad.jsonl:2: not valid JSON"):
        load_cases(bad)
    with pytest.raises(CaseFileError, match="cannot read"):
        load_cases(tmp_path / "missing.yaml")
    broken = tmp_path / "b.yaml"
    broken.write_text("cases: [\n")
    with pytest.raises(CaseFileError, match="not valid YAML"):
        load_cases(broken)


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["id", "message", "messages", "expected", "tool", "arguments", "calls",
                                       "tags", "one_of", "approx", "cases", "today", "system_prompt", "x"]),
                      inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(_values)
def test_any_parsed_data_gives_a_case_set_or_a_case_file_error(data: object) -> None:
    try:
        parse_case_set(data, "fuzz.yaml")
    except CaseFileError as exc:
        message = str(exc)
    else:
        return
    assert message.startswith("fuzz.yaml")


def test_deep_and_huge_and_unicode_cases_load() -> None:
    deep: object = "x"
    for _ in range(200):
        deep = {"exact": [deep]} if isinstance(deep, dict) else [deep]
    cs = parse_case_set({"cases": [{"id": "ज़ीरा-💥", "message": "जीरा " * 10_000, "expected": {
        "tool": "t", "arguments": {"a": {"exact": deep}}}}]})
    assert cs.cases[0].id == "ज़ीरा-💥" and len(cs.cases[0].messages[0]["content"]) == 50_000
