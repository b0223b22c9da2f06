"""The selection eval: does the model call the right tool first, with the right arguments, every time?

Each case runs k times. Tool choice and arguments are scored separately (the right tool with 4 kg instead
of 400 kg is still a failure); pass@1 is the mean over runs, pass^k the share of cases that passed on all
k runs; cases whose runs disagree are listed as shaky; everything is broken down per tag and per field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..catalog._toolset import Toolset
from ._cases import Case, CaseSet, Expectation, check_against_toolset
from ._model_errors import DEFAULT_MAX_MODEL_ERRORS, ModelErrorTally, TooManyModelErrors, allowed_errors
from ._models import Model, ModelError, ModelRequest, run_all
from ._scoring import CallCheck, FieldError, ToolCall, ToolSpec, check_call, check_parallel


def tool_specs(toolset: Toolset) -> dict[str, ToolSpec]:
    """The scorer's view of a toolset: each tool's input schema (not the strict export)."""
    return {t.name: ToolSpec.from_schema(t.name, t.input_schema) for t in toolset}


def _drop_optional_nulls(call: ToolCall, spec: ToolSpec | None) -> ToolCall:
    """Strict-mode exports make every field required and nullable; a null optional field means "not given"."""
    if spec is None or call.arguments is None or None not in call.arguments.values():
        return call
    args = {k: v for k, v in call.arguments.items() if not (v is None and k not in spec.required)}
    return ToolCall(call.name, args, call.raw_arguments)


def score_reply(expectation: Expectation, calls: Sequence[ToolCall], specs: Mapping[str, ToolSpec]) -> CallCheck:
    """Score the first turn of a reply: no call expected, one first call, or unordered parallel calls."""
    if expectation.no_tool:
        if calls:
            return CallCheck(False, False, (FieldError("wrong_tool", None, "no_tool", calls[0].name),))
        return CallCheck(True, True)
    if not calls:
        return CallCheck(False, False, (FieldError("wrong_tool", None, expectation.calls[0].tool, None),))
    calls = [_drop_optional_nulls(c, specs.get(c.name)) for c in calls]
    if len(expectation.calls) > 1:
        return check_parallel(expectation.calls, calls, specs)
    expected = expectation.calls[0]
    alternatives = expectation.tools_any_of[0] if expectation.tools_any_of else ()
    first = calls[0]
    if first.name in alternatives:
        expected = type(expected)(first.name, expected.arguments, expected.strict)
    return check_call(expected, first, specs.get(expected.tool))


@dataclass(frozen=True, slots=True)
class RunResult:
    case_id: str
    run: int
    tool_ok: bool
    args_ok: bool
    calls: tuple[ToolCall, ...]
    errors: tuple[FieldError, ...] = ()
    text: str | None = None
    model_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.tool_ok and self.args_ok

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case_id, "run": self.run, "ok": self.ok, "tool_ok": self.tool_ok,
                "args_ok": self.args_ok, "calls": [c.to_dict() for c in self.calls],
                "errors": [e.to_dict() for e in self.errors], "text": self.text, "model_error": self.model_error}


@dataclass(frozen=True, slots=True)
class Rate:
    passed: int
    total: int

    @property
    def value(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "total": self.total, "rate": round(self.value, 4)}


@dataclass(frozen=True, slots=True)
class SelectionReport:
    """Everything the selection eval measured (JSON schema: docs/evals.md, "selection")."""

    model: str
    toolset: str
    runs: int
    results: tuple[RunResult, ...]
    tags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # case id -> tags

    def _by_case(self) -> dict[str, list[RunResult]]:
        out: dict[str, list[RunResult]] = {}
        for r in self.results:
            out.setdefault(r.case_id, []).append(r)
        return out

    @property
    def cases(self) -> int:
        return len(self._by_case())

    @property
    def tool_accuracy(self) -> Rate:
        return Rate(sum(r.tool_ok for r in self.results), len(self.results))

    @property
    def argument_accuracy(self) -> Rate:
        """Among runs that chose the right tool, the share whose arguments were right too."""
        chosen = [r for r in self.results if r.tool_ok]
        return Rate(sum(r.args_ok for r in chosen), len(chosen))

    @property
    def pass_at_1(self) -> Rate:
        return Rate(sum(r.ok for r in self.results), len(self.results))

    @property
    def pass_hat_k(self) -> Rate:
        by_case = self._by_case()
        return Rate(sum(all(r.ok for r in rs) for rs in by_case.values()), len(by_case))

    @property
    def cases_passed(self) -> Rate:
        """Cases whose majority of runs passed (the "29 of 40" count)."""
        by_case = self._by_case()
        return Rate(sum(sum(r.ok for r in rs) * 2 > len(rs) for rs in by_case.values()), len(by_case))

    @property
    def shaky(self) -> list[str]:
        """Cases whose runs disagree: on the verdict or on the calls made."""
        out = []
        for case_id, rs in self._by_case().items():
            verdicts = {r.ok for r in rs}
            calls = {tuple((c.name, repr(sorted((c.arguments or {}).items()))) for c in r.calls) for r in rs}
            if len(verdicts) > 1 or len(calls) > 1:
                out.append(case_id)
        return out

    def per_tag(self) -> dict[str, dict[str, Rate]]:
        out: dict[str, dict[str, Rate]] = {}
        by_case = self._by_case()
        tags = sorted({t for ts in self.tags.values() for t in ts})
        for tag in tags:
            rs = [r for cid, runs in by_case.items() if tag in self.tags.get(cid, ()) for r in runs]
            groups = [runs for cid, runs in by_case.items() if tag in self.tags.get(cid, ())]
            out[tag] = {
                "tool": Rate(sum(r.tool_ok for r in rs), len(rs)),
                "pass_at_1": Rate(sum(r.ok for r in rs), len(rs)),
                "pass_hat_k": Rate(sum(all(r.ok for r in g) for g in groups), len(groups)),
                "model_errors": Rate(sum(r.model_error is not None for r in rs), len(rs)),
            }
        return out

    def field_failures(self) -> list[tuple[str, str, str, int]]:
        """(tool, field, kind, count) for argument failures, most frequent first."""
        counter: Counter[tuple[str, str, str]] = Counter()
        for r in self.results:
            if r.model_error is not None:
                counter[("(model)", "-", "model_error")] += 1
            for e in r.errors:
                tool = r.calls[0].name if r.calls else "(no call)"
                counter[(tool if e.kind != "wrong_tool" else "(tool choice)", e.field or "-", e.kind)] += 1
        return [(t, f, k, n) for (t, f, k), n in counter.most_common()]

    def failures(self) -> list[RunResult]:
        return [r for r in self.results if not r.ok]

    @property
    def model_errors(self) -> ModelErrorTally:
        return ModelErrorTally.of(r.model_error for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "selection",
            "model": self.model,
            "toolset": self.toolset,
            "runs": self.runs,
            "cases": self.cases,
            "summary": {
                "tool_accuracy": self.tool_accuracy.to_dict(),
                "argument_accuracy": self.argument_accuracy.to_dict(),
                "pass_at_1": self.pass_at_1.to_dict(),
                "pass_hat_k": self.pass_hat_k.to_dict(),
                "cases_passed": self.cases_passed.to_dict(),
                "model_errors": Rate(self.model_errors.errors, len(self.results)).to_dict(),
            },
            "partial": self.model_errors.errors > 0,
            "model_errors": self.model_errors.to_dict(),
            "per_tag": {t: {k: v.to_dict() for k, v in d.items()} for t, d in self.per_tag().items()},
            "field_failures": [{"tool": t, "field": f, "kind": k, "count": n} for t, f, k, n in
                               self.field_failures()],
            "shaky": self.shaky,
            "results": [r.to_dict() for r in self.results],
        }


def build_requests(cases: CaseSet, toolset: Toolset, runs: int) -> list[tuple[Case, ModelRequest]]:
    tools = tuple(toolset.to_openai())
    return [
        (case, ModelRequest(case.id, run, tuple(cases.messages_for(case)), tools))
        for case in cases.cases
        for run in range(runs)
    ]


def run_selection(
    cases: CaseSet,
    toolset: Toolset,
    model: Model,
    *,
    label: str = "default",
    runs: int = 3,
    concurrency: int = 4,
    progress: bool = False,
    max_model_errors: float | None = DEFAULT_MAX_MODEL_ERRORS,
) -> SelectionReport:
    """Run every case `runs` times against `model` with `toolset` and score each first turn.

    `label` picks the expectation when the case file scores several toolsets (e.g. "old" and "new").
    More than `max_model_errors` (a share of the runs) unanswered raises `TooManyModelErrors`; None keeps
    whatever came back (the report is then marked partial)."""
    if runs < 1:
        raise ValueError("runs must be at least 1")
    specs = tool_specs(toolset)
    problems = check_against_toolset(cases, label, specs)
    if problems:
        raise ValueError("the cases do not fit the toolset:\n  " + "\n  ".join(problems[:20]))
    pairs = build_requests(cases, toolset, runs)
    budget = None if max_model_errors is None else allowed_errors(len(pairs), max_model_errors)
    replies = run_all(model, [r for _, r in pairs], concurrency=concurrency, show_progress=progress,
                      max_errors=budget)
    results = []
    for (case, request), reply in zip(pairs, replies, strict=True):
        if isinstance(reply, ModelError):
            results.append(RunResult(case.id, request.run, False, False, (), (), None, str(reply)))
            continue
        check = score_reply(case.expectation(label), reply.calls, specs)
        results.append(RunResult(case.id, request.run, check.tool_ok, check.args_ok, reply.calls, check.errors,
                                 reply.text))
    report = SelectionReport(model.name, label, runs, tuple(results), {c.id: c.tags for c in cases.cases})
    if max_model_errors is not None and report.model_errors.over(max_model_errors):
        raise TooManyModelErrors(report.model_errors, max_model_errors)
    return report

