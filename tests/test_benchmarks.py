"""The benchmarks' own logic: each speed target judged met / not met / reported / not measured from the rows,
and `bench_scoring` without BFCL's checker saying so instead of failing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from benchmarks import bench_scoring
from benchmarks._harness import TARGETS, target_summary, targeted
from tests._data import REPO_ROOT


def _verdicts(rows: list[dict[str, object]]) -> dict[str, str]:
    goals = {t.goal: t.key for t in TARGETS}
    return {goals[line["target"]]: line["verdict"] for line in target_summary(rows)}


def test_each_target_is_judged_in_its_direction() -> None:
    row = {"benchmark": "b", "case": "c", "value": 1.0}
    verdicts = _verdicts([
        targeted(row, "async-def", 2.0),  # at most 2x: met at the limit
        targeted(row, "async-sync", 15.5),  # at most +15 µs
        targeted(row, "gateway-p50", 1.04),
        targeted(row, "lint-10k", 1.2),
        targeted(row, "scoring", 2.1),  # at least 2x
        targeted(row, "sqlite-share", 0.55),  # no limit: reported
    ])
    assert verdicts == {"async-def": "met", "async-sync": "not met", "gateway-p50": "met",
                        "gateway-p95": "not measured", "lint-10k": "not met", "scoring": "met",
                        "sqlite-share": "reported"}
    assert _verdicts([targeted(row, "scoring", 1.9)])["scoring"] == "not met"


def test_a_target_without_a_number_says_why() -> None:
    missing = {"benchmark": "scoring", "case": "c", "value": 0.1, "note": bench_scoring.NOT_INSTALLED,
               "target": "scoring"}
    assert _verdicts([missing])["scoring"] == bench_scoring.NOT_INSTALLED


def test_an_unknown_target_is_refused() -> None:
    with pytest.raises(ValueError, match="lint-1k"):
        targeted({}, "lint-1k", 0.5)


def test_scoring_benchmark_says_reference_not_installed_without_bfcl_eval() -> None:
    # `import bfcl_eval` fails in the child as on a machine without it (a None entry in sys.modules).
    code = ("import sys; sys.modules['bfcl_eval'] = None\n"
            "from benchmarks import bench_scoring as b\n"
            "assert b.reference_checker() is None\n"
            "import json; print(json.dumps(b.run(quick=True)))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "reference not installed" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_with_bfcl_eval_installed_the_reference_is_loaded() -> None:
    checker = bench_scoring.reference_checker()
    assert checker is not None and callable(checker)


def test_a_missed_target_carries_its_reason_and_a_met_one_none() -> None:
    row = {"benchmark": "b", "case": "c", "value": 1.0}
    lines = {line["wanted"]: line for line in target_summary([targeted(row, "lint-10k", 1.6),
                                                               targeted(row, "scoring", 2.4)])}
    assert "docs/lint.md" in lines["< 1 s"]["why"] and lines["< 1 s"]["verdict"] == "not met"
    assert lines[">= 2x"]["why"] == ""
    assert all(t.if_missed for t in TARGETS if t.limit is not None)  # every limit says where its account lives


def test_the_targets_region_renders_each_target_with_its_verdict() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("render_bench", REPO_ROOT / "scripts" / "render_bench.py")
    assert spec is not None and spec.loader is not None
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    row = {"benchmark": "b", "case": "c", "value": 1.0}
    results = {"date": "D", "machine": "M", "benchmarks": {},
               "targets": target_summary([targeted(row, "gateway-p50", 1.2)])}
    text = render.update("<!-- bench:begin targets -->\nold\n<!-- bench:end -->\n", results)
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + len(TARGETS)
    gateway = next(line for line in table if "p50" in line)
    assert "| 1.2 x | not met | toolproof's own share" in gateway
    assert "not measured" in next(line for line in table if "lint" in line)
    quick = render.update("<!-- bench:begin targets -->\n<!-- bench:end -->\n", {**results, "targets": []})
    assert "measured no targets" in quick
