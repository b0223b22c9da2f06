"""The wholesaler's eval material: the 40-message case set (`selection.yaml`), the seeded failures
(`library.FAILURES`), and recorded model outputs for the old and new toolsets.

The recorded outputs (`recorded_*.jsonl`) were AUTHORED BY HAND (by `author_recordings.py`) as a plausible
model's behaviour; they are not the output of a live model. They make the evals run offline in tests and in
the demo; record real ones with `toolproof eval selection ... --model openai:MODEL --record FILE`.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from toolproof import Toolset

from ..old_tools import build_old_toolset
from ..shop import Shop
from ..tools import build_toolset

HERE = Path(__file__).parent
TODAY = date(2026, 10, 19)
SELECTION_CASES = HERE / "selection.yaml"
RECORDED = {
    "new": HERE / "recorded_selection_new.jsonl",
    "old": HERE / "recorded_selection_old.jsonl",
}
RECORDED_RECOVERY = {
    "new": HERE / "recorded_recovery_new.jsonl",
    "old": HERE / "recorded_recovery_old.jsonl",
}


def new_toolset() -> Toolset:
    """The six tools on an in-memory shop whose today is the case set's today."""
    return build_toolset(Shop(today=lambda: TODAY))


def old_toolset() -> Toolset:
    """The nine old tools on an in-memory shop."""
    return build_old_toolset(Shop(today=lambda: TODAY))


def run_demo() -> dict[str, object]:
    """The demo's offline evals on the recorded outputs, old toolset against new (well under a second):
    `{"selection_old", "selection_new", "recovery_old", "recovery_new"}` -> report objects."""
    from toolproof.evals import ReplayModel, load_cases, run_recovery, run_selection

    from .library import FAILURES

    cases = load_cases(SELECTION_CASES)
    out: dict[str, object] = {}
    for label, toolset, error_format in (("old", old_toolset(), "opaque"), ("new", new_toolset(), "envelope")):
        out[f"selection_{label}"] = run_selection(cases, toolset, ReplayModel.load(RECORDED[label]), label=label)
        out[f"recovery_{label}"] = run_recovery(FAILURES, toolset, ReplayModel.load(RECORDED_RECOVERY[label]),
                                                label=label, error_format=error_format)  # type: ignore[arg-type]
    return out
