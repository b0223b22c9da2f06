"""The rules over every real tool definition we have, and their precision from hand labels."""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache

import pytest

from tests._data import CORPORA
from toolproof.lint import ALL_RULES, Finding, LintConfig, lint_tooldefs, load_file

from .conftest import LABELS, corpus_files


@cache
def _corpus_findings() -> dict[str, list[Finding]]:
    out = {}
    for path in corpus_files():
        tools = load_file(path)
        out[path.relative_to(CORPORA).as_posix()] = lint_tooldefs(tools, LintConfig(select=("ALL",)))
    return out


@pytest.mark.e2e  # lints every corpus file (cached for the module)
def test_every_corpus_lints_without_crashing() -> None:
    found = _corpus_findings()
    assert len(found) >= 15  # 5 MCP files, 13 BFCL files with functions
    total = sum(len(load_file(p)) for p in corpus_files())
    assert total > 4000
    codes = {f.code for fs in found.values() for f in fs}
    assert {"TP313", "TP311", "TP402", "TP404"} <= codes  # BFCL's dict/float/any types are flagged


def _labels() -> list[dict[str, str]]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_at_least_150_labels_across_rules_and_corpora() -> None:
    rows = _labels()
    assert len(rows) >= 150
    assert len({r["code"] for r in rows}) >= 25
    assert len({r["corpus"] for r in rows}) >= 8
    assert all(r["label"] in ("right", "wrong") for r in rows)


def precision_table() -> dict[str, tuple[int, int, int]]:
    """code -> (right, labelled and still produced, labelled in total). A labelled finding that the current
    rules no longer produce (a fixed false positive) leaves the sample."""
    live = {(corpus, f.toolset, f.tool, f.code, f.pointer) for corpus, fs in _corpus_findings().items() for f in fs}
    table: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in _labels():
        row = table[r["code"]]
        row[2] += 1
        if (r["corpus"], r["toolset"], r["tool"], r["code"], r["pointer"]) in live:
            row[1] += 1
            row[0] += r["label"] == "right"
    return {code: (a, b, c) for code, (a, b, c) in sorted(table.items())}


@pytest.mark.e2e  # lints every corpus file (cached for the module)
def test_default_on_rules_are_precise() -> None:
    table = precision_table()
    for rule in ALL_RULES:
        right, still, _ = table.get(rule.code, (0, 0, 0))
        if rule.default_on and still:
            assert right / still >= 0.9, f"{rule.code} {rule.slug}: precision {right}/{still} < 90% but on by default"


@pytest.mark.e2e  # lints every corpus file (cached for the module)
def test_most_labels_still_reproduce() -> None:
    table = precision_table()
    still = sum(v[1] for v in table.values())
    assert still >= 140, f"only {still} labelled findings are still produced"


def held_out() -> dict[str, dict[str, tuple[int, int]]]:
    """code -> round -> (right, labelled), for the rounds labelled before any rule change they measure."""
    out: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for r in _labels():
        if str(r.get("round", "")).startswith("held-out"):
            cell = out[r["code"]][r["round"]]
            cell[0] += r["label"] == "right"
            cell[1] += 1
    return {c: {k: (v[0], v[1]) for k, v in rounds.items()} for c, rounds in out.items()}


if __name__ == "__main__":  # print the precision table for docs/lint.md
    held = held_out()
    for code, (right, still, total) in precision_table().items():
        rule = next(r for r in ALL_RULES if r.code == code)
        p = f"{100 * right / still:.0f}% ({right}/{still})" if still else "n/a"
        rounds = held.get(code, {})
        h = ", ".join(f"{k.removeprefix('held-out-')}: {a}/{b}" for k, (a, b) in sorted(rounds.items())) or "-"
        state = "on" if rule.default_on else "off"
        print(f"| {code} | {rule.slug} | {rule.severity} | {state} | {total} | {p} | {h} |")
