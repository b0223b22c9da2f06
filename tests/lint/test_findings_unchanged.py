"""Lint's findings on every corpus equal those recorded before lint was made faster (`golden_findings.py`)."""

from __future__ import annotations

import json

import pytest

from .golden_findings import GOLDEN, measure


@pytest.mark.e2e  # lints every corpus and a generated catalogue of 10,000 tools, twice (seconds)
def test_findings_equal_the_recorded_ones_on_every_corpus() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    now = measure()
    assert sorted(now) == sorted(golden)
    changed = {name: {"was": golden[name]["by_code"], "now": now[name]["by_code"]}
               for name in golden if now[name] != golden[name]}
    assert not changed, changed
