"""Reports (terminal, JSON, self-contained HTML) and the CLI: compare exits 1 on a regression."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from toolproof.cli import app
from toolproof.evals._report import bar_chart, compare, matrix_chart, read_json, render_html
from toolproof.examples.wholesaler.cases import HERE

RUNNER = CliRunner()


def flat(text: str) -> str:
    """The output with rich's line wrapping undone."""
    return " ".join(text.split())
CASES = str(HERE / "selection.yaml")
REPLAY = "replay:" + str(HERE / "recorded_selection_{label}.jsonl")


def _selection(tmp_path: Path, label: str) -> Path:
    out = tmp_path / f"{label}.json"
    result = RUNNER.invoke(app, ["eval", "selection", CASES, "-m", REPLAY, "-l", label, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_selection_cli_old_and_new_in_one_run_with_html(tmp_path: Path) -> None:
    html_path, json_path = tmp_path / "r.html", tmp_path / "r.json"
    result = RUNNER.invoke(app, ["eval", "selection", CASES, "-m", REPLAY, "-l", "old", "-l", "new", "--schema",
                                 "--out", str(json_path), "--html", str(html_path)])
    assert result.exit_code == 0, result.output
    assert "pass^3" in flat(result.output) and "shaky" in flat(result.output)
    reports = read_json(json_path)
    assert [r["kind"] for r in reports] == ["selection", "schema", "selection", "schema"]
    assert [r["summary"]["cases_passed"]["passed"] for r in reports if r["kind"] == "selection"] == [29, 38]
    page = html_path.read_text()
    assert page.count("<svg") >= 4 and "<script" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page)  # self-contained: nothing fetched


def test_recovery_cli_and_html_charts(tmp_path: Path) -> None:
    out, page = tmp_path / "rec.json", tmp_path / "rec.html"
    result = RUNNER.invoke(app, ["eval", "recovery", "toolproof.examples.wholesaler.cases.library:FAILURES",
                                 "--toolset", "toolproof.examples.wholesaler.cases:new_toolset", "-m",
                                 "replay:" + str(HERE / "recorded_recovery_new.jsonl"), "--out", str(out),
                                 "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert "outcome_unknown" in flat(result.output) and "confusion" in flat(result.output)
    html = page.read_text()
    assert "accuracy per error class" in html and "confusion" in html
    bad = RUNNER.invoke(app, ["eval", "recovery", "toolproof.examples.wholesaler.cases:new_toolset", "--toolset",
                              "toolproof.examples.wholesaler.cases:new_toolset", "-m", "scripted:x:y"])
    assert bad.exit_code == 2 and "not a sequence of SeededFailure" in flat(bad.output)


def test_compare_exits_1_on_regression_and_0_otherwise(tmp_path: Path) -> None:
    old, new = _selection(tmp_path, "old"), _selection(tmp_path, "new")
    better = RUNNER.invoke(app, ["eval", "compare", str(old), str(new)])
    assert better.exit_code == 0, better.output
    worse = RUNNER.invoke(app, ["eval", "compare", str(new), str(old), "--threshold", "0.05"])
    assert worse.exit_code == 1 and "selection.pass_at_1" in flat(worse.output)
    tolerant = RUNNER.invoke(app, ["eval", "compare", str(new), str(old), "--threshold", "1"])
    assert tolerant.exit_code == 0
    deltas = {d.metric: d for d in compare(read_json(old), read_json(new))}
    assert round(deltas["selection.cases_passed"].change, 3) == 0.225


def test_bad_inputs_get_clear_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("cases: nope\n")
    r = RUNNER.invoke(app, ["eval", "selection", str(broken), "-m", REPLAY])
    assert r.exit_code == 2 and "'cases' must be a non-empty list" in flat(r.output)
    r = RUNNER.invoke(app, ["eval", "selection", CASES, "-m", "gpt-4o"])
    assert r.exit_code == 2 and "expected openai:MODEL" in flat(r.output)
    r = RUNNER.invoke(app, ["eval", "selection", CASES, "-m", REPLAY, "-l", "newest"])
    assert r.exit_code == 2 and "no toolset 'newest'" in flat(r.output)
    not_json = tmp_path / "x.json"
    not_json.write_text("[1, 2]")
    r = RUNNER.invoke(app, ["eval", "compare", str(not_json), str(not_json)])
    assert r.exit_code == 2 and "not a toolproof eval result" in flat(r.output)
    r = RUNNER.invoke(app, ["eval", "bfcl", "--category", "multi_turn_base", "-m", "scripted:x:y"])
    assert r.exit_code == 2 and "not scored here" in flat(r.output)


def test_bfcl_cli_scorer_only_and_agreement(tmp_path: Path) -> None:
    outputs = tmp_path / "out.jsonl"
    outputs.write_text(json.dumps({"id": "simple_python_1", "result": [{"math.factorial": {"number": 5}}]}) + "\n")
    out = tmp_path / "b.json"
    r = RUNNER.invoke(app, ["eval", "bfcl", "--category", "simple_python", "--outputs", str(outputs), "--first", "2",
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert read_json(out)[0]["per_category"]["simple_python"] == {"passed": 1, "scored": 2, "accuracy": 0.5,
                                                                       "model_errors": 0}
    r = RUNNER.invoke(app, ["eval", "bfcl", "--category", "simple_javascript", "--agreement"])
    assert r.exit_code == 0 and "disagree:" not in r.output and "│ 50 │ 50 │ 49 │" in flat(r.output)


def test_svg_charts_escape_labels() -> None:
    svg = bar_chart("t<1>", [("a&b", 0.5)], max_value=1)
    assert "a&amp;b" in svg and "t&lt;1&gt;" in svg
    assert matrix_chart("m", {"repair": {"repair": 2, "retry": 1}, "retry": {"repair": 0, "retry": 0}}).count(
        "<rect") == 2
    assert "<svg" not in render_html([])
