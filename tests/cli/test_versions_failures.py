"""Failures by version, from the outside: real calls into a real SQLite store through two versions of one
tool, `audit fields --by-version` maps the failures to the version; `eval schema --baseline` fails on a
per-field regression."""

from __future__ import annotations

import json
from pathlib import Path

import toolproof
from tests.cli._run import json_lines, toolproof_cli
from toolproof.examples.wholesaler.cases import HERE
from toolproof.versions import lock_toolset


def order_v1() -> toolproof.Toolset:
    @toolproof.tool(effect="read")
    def quote(crop: str, quantity: int) -> dict[str, int]:
        """Quote a price for a crop. Use it before an order. Returns the price.

        Args:
            crop: The crop.
            quantity: How much.
        """
        return {"price": quantity}

    return toolproof.Toolset([quote])


def order_v2() -> toolproof.Toolset:
    @toolproof.tool(effect="read")
    def quote(crop: str, quantity_kg: int, grade: str) -> dict[str, int]:
        """Quote a price for a crop. Use it before an order. Returns the price.

        Args:
            crop: The crop.
            quantity_kg: Kilograms.
            grade: The grade.
        """
        return {"price": quantity_kg}

    return toolproof.Toolset([quote])


def test_audit_fields_by_version_maps_a_failure_spike_to_the_change(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'audit.sqlite3'}"
    calls = [{"crop": "rice", "quantity": 3}] * 4 + [{"crop": "rice", "quantity": "a lot"}]
    for ts in (order_v1(), order_v2()):
        runner = toolproof.Runner(ts, store=url)
        for args in calls:  # the same calls, written against v1: v2 renamed `quantity` and added `grade`
            runner.call_sync("quote", dict(args))
        runner.close()
    rows = json_lines(toolproof_cli("audit", "fields", "--by-version", "--json", "-s", url).stdout)
    v1, v2 = (lock_toolset(ts).tools["quote"].version for ts in (order_v1(), order_v2()))
    assert [r["schema_version"] for r in rows if r["field"] == "(any field)"] == [v1, v2]  # oldest first
    by = {(r["schema_version"], r["field"]): (r["failed"], r["calls"]) for r in rows}
    assert by[(v1, "(any field)")] == (1, 5) and by[(v1, "quantity")] == (1, 5)
    assert by[(v2, "(any field)")] == (5, 5)
    assert by[(v2, "quantity")] == (5, 5)
    text = toolproof_cli("audit", "fields", "--by-version", "-s", url).stdout
    assert v1 in text and v2 in text and "100.0%" in text


CASES = str(HERE / "selection.yaml")
REPLAY = "replay:" + str(HERE / "recorded_selection_new.jsonl")


def test_eval_schema_baseline_fails_on_a_per_field_regression(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    toolproof_cli("eval", "schema", CASES, "-m", REPLAY, "-l", "new", "--out", str(base))
    same = toolproof_cli("eval", "schema", CASES, "-m", REPLAY, "-l", "new", "--baseline", str(base), "--json")
    (report,) = json_lines(same.stdout)
    fields = report["baseline"]["fields"]
    assert fields and not any(f["regressed"] for f in fields)
    assert fields[0]["old_version"] == fields[0]["new_version"] == report["schema_versions"][fields[0]["tool"]]
    # a baseline in which place_order never failed: the same run now is a regression on that field
    doc = json.loads(base.read_text(encoding="utf-8"))
    doc["reports"][0]["per_field"] = []
    better = tmp_path / "better.json"
    better.write_text(json.dumps(doc), encoding="utf-8")
    worse = toolproof_cli("eval", "schema", CASES, "-m", REPLAY, "-l", "new", "--baseline", str(better), code=1)
    assert "REGRESSION" in worse.stdout and "regressed against the baseline" in worse.stdout
    # a tolerance wider than the rise lets it through
    toolproof_cli("eval", "schema", CASES, "-m", REPLAY, "-l", "new", "--baseline", str(better),
                  "--tolerance", "0.5")
    bad = toolproof_cli("eval", "schema", CASES, "-m", REPLAY, "-l", "new", "--baseline", str(tmp_path / "no"),
                        code=2)
    assert bad.stderr.startswith("error: --baseline")
