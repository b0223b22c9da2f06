"""The recovery eval: seed a failure, watch what the model does next, score it per error class.

A fixed agent loop sends the case's message, answers the model's first tool call with the seeded
envelope (whatever tool it called), and classifies the model's next step:

- `repair`: the same tool with changed arguments;
- `retry`: the identical call again;
- `reread`: a read tool (to look at the current state);
- `ask_person`: no tool, a question to the user;
- `escalate`: no tool, a hand-over or a stop (or `other`: a different write tool).

A variant may give the result of that re-read (`after_reread`) and what should follow it, so "a conflict
that clears on re-read" and "one that does not" are scored as different paths. Scores are per class and
overall, with the confusion matrix: a single blended number hides the class that breaks.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..catalog._toolset import Toolset
from ..contract._envelope import Envelope, Meta
from ..contract._errors import CLASS_SPECS, ErrorClass, NextAction, ToolError
from ._model_errors import DEFAULT_MAX_MODEL_ERRORS, ModelErrorTally, TooManyModelErrors, allowed_errors
from ._models import Model, ModelError, ModelReply, ModelRequest, run_all
from ._scoring import ToolCall

Observed = Literal["repair", "retry", "reread", "ask_person", "escalate", "other", "no_call", "model_error"]
OBSERVED_LABELS: Final[tuple[str, ...]] = ("repair", "retry", "reread", "ask_person", "escalate", "other", "no_call",
                                           "model_error")
ErrorFormat = Literal["envelope", "opaque"]

_HANDOVER: Final = re.compile(
    r"\b(hand(ed|ing)? (it |this )?over|escalat\w*|colleague|our team|a person|a human|human agent|staff|"
    r"manager|support team|someone from|call you back|get back to you|passed (it|this) on)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class SeededFailure:
    """One seeded failure: the message that leads to a tool call, and the error that call gets back.

    accept: the next steps counted as right (default: the class's `next_action`).
    after_reread: what a read tool returns if the model re-reads (a result, or another ToolError).
    followup: the steps counted as right after that re-read."""

    id: str
    message: str
    error: ToolError
    accept: frozenset[NextAction] = frozenset()
    after_reread: Any = None
    followup: frozenset[NextAction] = frozenset()
    note: str = ""

    @property
    def error_class(self) -> ErrorClass:
        return self.error.error_class

    @property
    def expected(self) -> NextAction:
        return CLASS_SPECS[self.error_class].next_action

    @property
    def accepted(self) -> frozenset[NextAction]:
        return self.accept or frozenset({self.expected})


def envelope_for(failure: SeededFailure, call: ToolCall, call_id: str) -> Envelope:
    return Envelope.failure(failure.error, Meta(tool=call.name, call_id=call_id, attempts=1,
                                                idempotency_key=failure.error.idempotency_key))


def render_error(failure: SeededFailure, call: ToolCall, call_id: str, fmt: ErrorFormat) -> str:
    """The tool message the model sees: our envelope, or the opaque error an unwrapped tool returned."""
    if fmt == "opaque":
        return json.dumps({"error": f"Error {CLASS_SPECS[failure.error_class].http_status}"})
    return envelope_for(failure, call, call_id).to_json()


def classify_step(first: ToolCall, reply: ModelReply, toolset: Toolset) -> Observed:
    """Which of the five next steps a reply is (or `other` / `no_call`)."""
    if not reply.calls:
        text = reply.text or ""
        if _HANDOVER.search(text):
            return "escalate"
        return "ask_person" if "?" in text else "escalate"
    nxt = reply.calls[0]
    if nxt.name == first.name:
        same = nxt.arguments is not None and first.arguments is not None and dict(nxt.arguments) == dict(
            first.arguments)
        return "retry" if same else "repair"
    if nxt.name in toolset and toolset.get(nxt.name).effect == "read":
        return "reread"
    return "other"


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    failure_id: str
    error_class: ErrorClass
    run: int
    expected: NextAction
    observed: str
    ok: bool
    followup_observed: str | None = None
    followup_ok: bool | None = None
    first_call: ToolCall | None = None
    next_calls: tuple[ToolCall, ...] = ()
    text: str | None = None
    model_error: str | None = None  # why the model gave no answer, at any step

    def to_dict(self) -> dict[str, Any]:
        return {"failure": self.failure_id, "class": self.error_class.value, "run": self.run,
                "expected": self.expected.value, "observed": self.observed, "ok": self.ok,
                "followup_observed": self.followup_observed, "followup_ok": self.followup_ok,
                "first_call": self.first_call.to_dict() if self.first_call else None,
                "next_calls": [c.to_dict() for c in self.next_calls], "text": self.text,
                "model_error": self.model_error}


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """Per-class and overall scores and the confusion matrix (JSON schema: docs/evals.md, "recovery")."""

    model: str
    toolset: str
    error_format: str
    results: tuple[RecoveryResult, ...]

    def per_class(self) -> dict[str, tuple[int, int]]:
        out: dict[str, list[int]] = {c.value: [0, 0] for c in ErrorClass}
        for r in self.results:
            out[r.error_class.value][1] += 1
            out[r.error_class.value][0] += r.ok
        return {c: (p, n) for c, (p, n) in out.items() if n}

    @property
    def model_errors(self) -> ModelErrorTally:
        """Seeded runs where the model gave no answer at some step."""
        return ModelErrorTally.of(r.model_error for r in self.results)

    def model_errors_per_class(self) -> Counter[str]:
        return Counter(r.error_class.value for r in self.results if r.model_error is not None)

    @property
    def overall(self) -> tuple[int, int]:
        return sum(r.ok for r in self.results), len(self.results)

    @property
    def macro_accuracy(self) -> float:
        """The mean of the per-class accuracies (every class weighs the same)."""
        rates = [p / n for p, n in self.per_class().values() if n]
        return sum(rates) / len(rates) if rates else 0.0

    def followup(self) -> tuple[int, int]:
        scored = [r for r in self.results if r.followup_ok is not None]
        return sum(bool(r.followup_ok) for r in scored), len(scored)

    def confusion(self) -> dict[str, dict[str, int]]:
        """expected next action -> observed next step -> count."""
        counts: Counter[tuple[str, str]] = Counter((r.expected.value, r.observed) for r in self.results)
        return {a.value: {o: counts[(a.value, o)] for o in OBSERVED_LABELS} for a in NextAction}

    def to_dict(self) -> dict[str, Any]:
        passed, total = self.overall
        fp, fn = self.followup()
        return {
            "kind": "recovery",
            "model": self.model,
            "toolset": self.toolset,
            "error_format": self.error_format,
            "summary": {"passed": passed, "total": total, "accuracy": round(passed / total, 4) if total else 0.0,
                        "macro_accuracy": round(self.macro_accuracy, 4),
                        "followup": {"passed": fp, "total": fn}},
            "per_class": {c: {"passed": p, "total": n, "accuracy": round(p / n, 4),
                              "model_errors": self.model_errors_per_class()[c]}
                          for c, (p, n) in self.per_class().items()},
            "partial": self.model_errors.errors > 0,
            "model_errors": self.model_errors.to_dict(),
            "confusion": self.confusion(),
            "results": [r.to_dict() for r in self.results],
        }


def _assistant_message(calls: Sequence[ToolCall], ids: Sequence[str]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments or {}))}}
        for c, i in zip(calls, ids, strict=True)]}


def _tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _reread_content(failure: SeededFailure, call: ToolCall, call_id: str) -> str:
    meta = Meta(tool=call.name, call_id=call_id, attempts=1)
    if isinstance(failure.after_reread, ToolError):
        return Envelope.failure(failure.after_reread, meta).to_json()
    return Envelope.success(failure.after_reread, meta).to_json()


@dataclass
class _Loop:
    """The fixed agent loop for one failure and run, stepped by the driver so requests can be batched."""

    failure: SeededFailure
    run: int
    base: list[dict[str, Any]]
    messages: list[dict[str, Any]] = field(default_factory=list)
    first: ToolCall | None = None
    result: RecoveryResult | None = None


def run_recovery(
    failures: Sequence[SeededFailure],
    toolset: Toolset,
    model: Model,
    *,
    system_prompt: str | None = None,
    runs: int = 1,
    error_format: ErrorFormat = "envelope",
    label: str = "default",
    concurrency: int = 4,
    progress: bool = False,
    max_model_errors: float | None = DEFAULT_MAX_MODEL_ERRORS,
) -> RecoveryReport:
    """Run every seeded failure `runs` times through the fixed loop and score the next step.

    More than `max_model_errors` (a share of the seeded runs) without an answer raises `TooManyModelErrors`;
    None keeps whatever came back (the report is then marked partial)."""
    tools = tuple(toolset.to_openai())
    loops = []
    for failure in failures:
        for run in range(runs):
            head = [{"role": "system", "content": system_prompt}] if system_prompt else []
            loops.append(_Loop(failure, run, [*head, {"role": "user", "content": failure.message}]))

    def ask(step: int, active: list[_Loop]) -> list[ModelReply | ModelError]:
        requests = [ModelRequest(lp.failure.id, lp.run, tuple(lp.base + lp.messages), tools, step) for lp in active]
        budget = None if max_model_errors is None else allowed_errors(len(requests), max_model_errors)
        return run_all(model, requests, concurrency=concurrency, show_progress=progress, max_errors=budget)

    def done(lp: _Loop, observed: str, reply: ModelReply | ModelError | None = None, ok: bool = False) -> None:
        answer = reply if isinstance(reply, ModelReply) else None
        lp.result = RecoveryResult(lp.failure.id, lp.failure.error_class, lp.run, lp.failure.expected, observed, ok,
                                   first_call=lp.first, next_calls=answer.calls if answer else (),
                                   text=answer.text if answer else None,
                                   model_error=str(reply) if isinstance(reply, ModelError) else None)

    # step 0: the first call, answered with the seeded error
    for lp, reply in zip(loops, ask(0, loops), strict=True):
        if isinstance(reply, ModelError):
            done(lp, "model_error", reply)
            continue
        if not reply.calls:
            done(lp, "no_call", reply)
            continue
        lp.first = reply.calls[0]
        call_id = f"call_{lp.failure.id}_0"
        lp.messages += [_assistant_message([lp.first], [call_id]),
                        _tool_message(call_id, render_error(lp.failure, lp.first, call_id, error_format))]
    # step 1: the next step, classified and scored
    active = [lp for lp in loops if lp.result is None]
    followups: list[_Loop] = []
    for lp, reply in zip(active, ask(1, active), strict=True):
        assert lp.first is not None
        if isinstance(reply, ModelError):
            done(lp, "model_error", reply)
            continue
        observed = classify_step(lp.first, reply, toolset)
        ok = observed in {a.value for a in lp.failure.accepted}
        done(lp, observed, reply, ok)
        if observed == "reread" and lp.failure.after_reread is not None and lp.failure.followup:
            call_id = f"call_{lp.failure.id}_1"
            read = reply.calls[0]
            lp.messages += [_assistant_message([read], [call_id]),
                            _tool_message(call_id, _reread_content(lp.failure, read, call_id))]
            followups.append(lp)
    # step 2 (only after a re-read the variant answers): what the model does with what it read
    for lp, reply in zip(followups, ask(2, followups) if followups else [], strict=True):
        assert lp.result is not None and lp.first is not None
        observed = "model_error" if isinstance(reply, ModelError) else classify_step(lp.first, reply, toolset)
        ok = observed in {a.value for a in lp.failure.followup}
        r = lp.result
        lp.result = RecoveryResult(r.failure_id, r.error_class, r.run, r.expected, r.observed, r.ok, observed, ok,
                                   r.first_call, r.next_calls, r.text,
                                   str(reply) if isinstance(reply, ModelError) else None)
    results = tuple(lp.result for lp in loops if lp.result is not None)
    report = RecoveryReport(model.name, label, error_format, results)
    if max_model_errors is not None and report.model_errors.over(max_model_errors):
        raise TooManyModelErrors(report.model_errors, max_model_errors)
    return report


def coverage(failures: Sequence[SeededFailure]) -> Mapping[ErrorClass, int]:
    """Variants per class (the library must have at least three for each of the 11)."""
    counts = Counter(f.error_class for f in failures)
    return {c: counts.get(c, 0) for c in ErrorClass}
