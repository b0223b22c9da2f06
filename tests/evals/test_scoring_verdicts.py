"""Every verdict of the BFCL scorer pinned: a faster scorer must give the same answers, errors included.

The calls are the ones `benchmarks/bench_scoring.py` times, and more: every AST category's ground truths
and all their perturbations (seed 0). Each category keeps (calls, passed, digest of every verdict's repr,
first error and all), recorded from the scorer before its checks were compiled per expected call. A change
that moves one verdict, one error kind, field or value, changes its category's digest."""

from __future__ import annotations

import hashlib
import pickle

from toolproof.evals import _bfcl as bfcl
from toolproof.evals._scoring import ExpectedCall, Options, ToolCall, check_call

PINNED = {
    "simple_python": (2606, 560, "33e5912baad856ed"),
    "simple_java": (601, 107, "f3653f599421921c"),
    "simple_javascript": (303, 62, "c89ed74358586d28"),
    "multiple": (1291, 279, "03f531a750ddfd25"),
    "parallel": (3303, 561, "481857af94d9a84c"),
    "parallel_multiple": (3635, 529, "c17956029f806be6"),
    "live_simple": (1661, 371, "5ade01bb6a09f237"),
    "live_multiple": (6658, 1639, "62cefc2b36ad8d5c"),
    "live_parallel": (255, 60, "433d1cc692de1efb"),
    "live_parallel_multiple": (351, 77, "cb634a7a1728ce02"),
}


def _verdicts(category: str) -> tuple[int, int, str]:
    digest = hashlib.sha256()
    scored = passed = 0
    for entry in bfcl.load_category(category):
        generated = [("ground_truth", bfcl.canonical_calls(entry))]
        generated += [(p.kind, list(p.calls)) for p in bfcl.perturbations(entry)]
        for kind, calls in generated:
            verdict = bfcl.score_entry(entry, calls)
            digest.update(f"{entry.id}|{kind}|{verdict!r}\n".encode())
            scored += 1
            passed += verdict.ok
    return scored, passed, digest.hexdigest()[:16]


def test_every_verdict_is_the_pinned_one() -> None:
    assert {c: _verdicts(c) for c in bfcl.AST_CATEGORIES} == PINNED


def test_the_digest_sees_an_error_detail_change() -> None:
    entry = bfcl.load_category("simple_python")[0]
    wrong = [bfcl.ToolCall(entry.expected_calls[0].tool, {"base": "ten", "height": 5})]
    before = repr(bfcl.score_entry(entry, wrong))
    assert "wrong_type" in before
    wrong = [bfcl.ToolCall(entry.expected_calls[0].tool, {"base": "eleven", "height": 5})]
    assert repr(bfcl.score_entry(entry, wrong)) != before


def test_compiled_entries_and_expected_calls_still_pickle() -> None:
    entry = bfcl.load_category("simple_java")[0]
    copy = pickle.loads(pickle.dumps(entry))
    calls = bfcl.canonical_calls(entry)
    assert copy == entry and repr(bfcl.score_entry(copy, calls)) == repr(bfcl.score_entry(entry, calls))
    expected = ExpectedCall("t", {"a": Options(("x",))}, strict=True)
    assert check_call(expected, ToolCall("t", {"a": "x"}), None).ok
    again = pickle.loads(pickle.dumps(expected))
    assert again == expected and not check_call(again, ToolCall("t", {"a": "y"}), None).ok
