"""BFCL's own AST checker as a reference to agree with (test and benchmark only; needs `bfcl-eval`).

`bfcl_eval.constants.model_config` imports every provider SDK; a stub module whose mapping answers any
model name with `underscore_to_dot = False` stands in for it, so the checker runs on pydantic alone.
"""

from __future__ import annotations

import random
import sys
import types
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._bfcl import BfclEntry, canonical_calls, language_of, load_category, perturbations, score_entry
from ._scoring import ToolCall

ReferenceChecker = Callable[[BfclEntry, Sequence[ToolCall]], bool]


def load_reference_checker() -> ReferenceChecker:
    """Import `bfcl_eval.eval_checker.ast_eval.ast_checker` behind the model-config stub."""
    if "bfcl_eval.constants.model_config" not in sys.modules:
        stub = types.ModuleType("bfcl_eval.constants.model_config")
        stub.MODEL_CONFIG_MAPPING = defaultdict(  # type: ignore[attr-defined]
            lambda: types.SimpleNamespace(underscore_to_dot=False)
        )
        sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from bfcl_eval.eval_checker.ast_eval.ast_checker import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        ast_checker,
    )

    languages = {"python": Language.PYTHON, "java": Language.JAVA, "javascript": Language.JAVASCRIPT}

    def check(entry: BfclEntry, calls: Sequence[ToolCall]) -> bool:
        output = [{c.name: dict(c.arguments or {})} for c in calls]
        try:
            result: dict[str, Any] = ast_checker(
                [dict(f) for f in entry.functions], output, [dict(a) for a in entry.ground_truth or ()],
                languages[language_of(entry.category)], entry.category, "toolproof-reference",
            )
        except Exception:
            return False
        return bool(result["valid"])

    return check


@dataclass(frozen=True, slots=True)
class Disagreement:
    entry_id: str
    kind: str  # "ground_truth" or a perturbation kind
    ours: bool
    reference: bool
    detail: str = ""


@dataclass(frozen=True, slots=True)
class AgreementRow:
    """One category: ground truths and perturbations judged by both checkers."""

    category: str
    ground_truths: int
    ground_truth_agree: int
    ground_truth_pass: int  # ground truths our scorer accepts (BFCL data defects fail in both)
    perturbations: int
    perturbation_agree: int
    perturbation_as_intended: int  # our verdict equals the perturbation's intent (fail, or pass if reordered)
    disagreements: tuple[Disagreement, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "ground_truths": self.ground_truths,
                "ground_truth_agree": self.ground_truth_agree, "ground_truth_pass": self.ground_truth_pass,
                "perturbations": self.perturbations, "perturbation_agree": self.perturbation_agree,
                "perturbation_as_intended": self.perturbation_as_intended,
                "disagreements": [vars_of(d) for d in self.disagreements]}


def vars_of(d: Disagreement) -> dict[str, Any]:
    return {"id": d.entry_id, "kind": d.kind, "ours": d.ours, "reference": d.reference, "detail": d.detail}


def agreement(categories: Sequence[str], root: Path | None = None, *, sample: int | None = None,
              seed: int = 0) -> list[AgreementRow]:
    """Judge every ground truth (turned into calls) and its perturbations with our scorer and BFCL's checker.

    `sample` keeps a deterministic subset of entries per category (every category still covered)."""
    reference = load_reference_checker()
    rows = []
    for category in categories:
        entries = [e for e in load_category(category, root) if e.ground_truth is not None]
        if sample is not None and len(entries) > sample:
            entries = random.Random(f"{seed}:{category}").sample(entries, sample)
        gt_agree = gt_pass = p_total = p_agree = p_intended = 0
        disagreements: list[Disagreement] = []
        for entry in entries:
            calls = canonical_calls(entry)
            ours, ref = score_entry(entry, calls).ok, reference(entry, calls)
            gt_pass += ours
            gt_agree += ours == ref
            if ours != ref:
                disagreements.append(Disagreement(entry.id, "ground_truth", ours, ref))
            for p in perturbations(entry, seed):
                ours, ref = score_entry(entry, p.calls).ok, reference(entry, p.calls)
                p_total += 1
                p_agree += ours == ref
                p_intended += ours == p.should_pass
                if ours != ref:
                    disagreements.append(Disagreement(entry.id, p.kind, ours, ref, p.detail))
        rows.append(AgreementRow(category, len(entries), gt_agree, gt_pass, p_total, p_agree, p_intended,
                                 tuple(disagreements)))
    return rows
