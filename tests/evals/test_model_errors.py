"""A model that cannot answer is an error, not a 0% result: the CLI as a subprocess against a closed port,
and the error budget through the library with a scripted model that fails on chosen cases."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests._data import REPO_ROOT
from toolproof.evals import ModelError, ModelReply, ModelRequest, ScriptedModel, load_cases, run_selection
from toolproof.evals._model_errors import TooManyModelErrors
from toolproof.examples.wholesaler.cases import HERE, new_toolset

CASES = str(HERE / "selection.yaml")


@pytest.fixture
def closed_port_url() -> str:
    """An endpoint nobody listens on: a port the kernel handed out, then closed again."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _toolproof(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "x", "COLUMNS": "200"}
    env.pop("OPENAI_BASE_URL", None)
    return subprocess.run([sys.executable, "-m", "toolproof", *args], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=env, timeout=120)


def test_selection_against_an_unreachable_model_exits_2_with_the_reason(closed_port_url: str,
                                                                         tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r = _toolproof("eval", "selection", CASES, "-m", "openai:gpt-x", "--base-url", closed_port_url, "-l", "new",
                   "--out", str(out))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Connection error" in r.stderr and "got no answer" in r.stderr and "--allow-errors" in r.stderr
    assert "0.0%" not in r.stdout and not out.exists()  # no table, no result file that reads like a score


def test_allow_errors_keeps_partial_results_clearly_marked(closed_port_url: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r = _toolproof("eval", "selection", CASES, "-m", "openai:gpt-x", "--base-url", closed_port_url, "-l", "new",
                   "--tag", "hinglish", "-k", "1", "--allow-errors", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PARTIAL RESULT: 8 of 8 model requests got no answer" in " ".join(r.stdout.split())
    assert "model errors" in r.stdout
    report = json.loads(out.read_text())["reports"][0]
    assert report["partial"] is True and report["model_errors"]["errors"] == 8
    assert "Connection error" in report["model_errors"]["reasons"][0]["message"]
    assert report["summary"]["model_errors"] == {"passed": 8, "total": 8, "rate": 1.0}


def test_recovery_and_bfcl_against_an_unreachable_model_exit_2(closed_port_url: str) -> None:
    rec = _toolproof("eval", "recovery", "toolproof.examples.wholesaler.cases.library:FAILURES", "--toolset",
                     "toolproof.examples.wholesaler.cases:new_toolset", "-m", "openai:gpt-x",
                     "--base-url", closed_port_url)
    assert rec.returncode == 2 and "Connection error" in rec.stderr, rec.stdout + rec.stderr
    bfcl = _toolproof("eval", "bfcl", "--category", "simple_python", "--first", "3", "-m", "openai:gpt-x", "--base-url",
                      closed_port_url)
    assert bfcl.returncode == 2 and "3 of 3 model requests got no answer" in bfcl.stderr, bfcl.stderr


def _flaky(failing: set[str], seen: list[str]) -> ScriptedModel:
    """A scripted model that cannot answer the chosen cases (a stand-in for a remote provider's errors)."""

    def answer(request: ModelRequest) -> ModelReply:
        seen.append(request.case_id)
        if request.case_id in failing:
            raise ModelError(f"upstream 500 for {request.case_id}")
        return ModelReply((), "ok")

    return ScriptedModel("scripted:flaky", answer)


def test_errors_within_the_budget_are_scored_and_counted_beyond_it_raise() -> None:
    cases = load_cases(CASES).select(ids=["thanks", "status-1042", "order-4-quintal-friday", "order-next-monday"])
    seen: list[str] = []
    report = run_selection(cases, new_toolset(), _flaky({"thanks"}, seen), label="new", runs=1,
                           max_model_errors=0.25)
    assert report.model_errors.errors == 1 and report.to_dict()["partial"] is True
    assert ("(model)", "-", "model_error", 1) in report.field_failures()
    with pytest.raises(TooManyModelErrors, match="2 of 4 model requests got no answer"):
        run_selection(cases, new_toolset(), _flaky({"thanks", "status-1042"}, []), label="new", runs=1,
                      max_model_errors=0.25)


def test_a_run_over_budget_stops_asking() -> None:
    cases = load_cases(CASES)
    seen: list[str] = []
    every = {c.id for c in cases.cases}
    with pytest.raises(TooManyModelErrors) as caught:
        run_selection(cases, new_toolset(), _flaky(every, seen), label="new", runs=3, concurrency=1,
                      max_model_errors=0.05)
    assert len(seen) == 7  # 6 failures allowed of 120 requests; the 7th breaks the budget, none are sent after
    assert caught.value.tally.not_asked == 120 - 7
