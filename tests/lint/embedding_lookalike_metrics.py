"""Precision and recall of the look-alike pass by meaning (`lookalike-embedding`) on the labelled pairs.

Each labelled TP402 pair (`other` a single tool) is judged alone: would `embedding_pairs` report the two tools
at this threshold? Tuning rounds (StableToolBench's `tuning-5-stb*`) choose the threshold; the rounds drawn
blind to the rules (`held-out-5-lookalike`, `held-out-6-tooluniverse*`) are reported, never tuned on.

    PYTHONPATH=src:. python -m tests.lint.embedding_lookalike_metrics
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache

from tests._data import CORPORA
from toolproof.lint import LintConfig, load_file
from toolproof.lint._model import ToolDef
from toolproof.lint._rules._toolset import embedding_pairs
from toolproof.retrieval.static import StaticEncoder

from . import stabletoolbench_toolsets, tooluniverse_toolsets
from .conftest import LABELS

TUNING = ("tuning-5-stb", "tuning-5-stb-rest")
HELD_OUT = ("held-out-5-lookalike", "held-out-6-tooluniverse", "held-out-6-tooluniverse-old")
GRID = (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)


@cache
def _file_toolsets(corpus: str) -> dict[str, list[ToolDef]]:
    groups: dict[str, list[ToolDef]] = defaultdict(list)
    for t in load_file(CORPORA / corpus):
        groups[t.toolset].append(t)
    return dict(groups)


def _toolset(corpus: str, name: str) -> list[ToolDef]:
    if corpus == stabletoolbench_toolsets.SOURCE:
        return stabletoolbench_toolsets.toolsets().get(name, [])
    if corpus.startswith("tooluniverse/"):
        return tooluniverse_toolsets.toolsets().get(name, [])
    return _file_toolsets(corpus).get(name, [])


def _pairs(rounds: tuple[str, ...]) -> list[tuple[ToolDef, ToolDef, bool]]:
    out = []
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        r = json.loads(line) if line.strip() else {}
        if r.get("round") not in rounds or r.get("code") != "TP402" or not isinstance(r.get("other"), str):
            continue
        members = {t.label: t for t in _toolset(r["corpus"], r["toolset"])}
        if r["tool"] in members and r["other"] in members:
            out.append((members[r["tool"]], members[r["other"]], r["label"] == "right"))
    return out


def metrics(pairs: list[tuple[ToolDef, ToolDef, bool]], threshold: float, encoder: StaticEncoder
            ) -> tuple[int, int, int, int]:
    """(right among reported, reported, right in all, pairs)."""
    config = LintConfig(thresholds={"lookalike-embedding": threshold}, encoder=encoder)
    ok = reported = 0
    for a, b, right in pairs:
        if any(True for _ in embedding_pairs([a, b], config)):
            reported += 1
            ok += right
    return ok, reported, sum(r for *_, r in pairs), len(pairs)


def main() -> None:
    encoder = StaticEncoder()
    tuning, held = _pairs(TUNING), _pairs(HELD_OUT)
    print("| threshold | tuning: precision | tuning: recall | held out: reported (right) of pairs |")
    print("|---|---|---|---|")
    for t in GRID:
        ok, rep, right, _ = metrics(tuning, t, encoder)
        h_ok, h_rep, h_right, h_n = metrics(held, t, encoder)
        print(f"| {t} | {ok}/{rep} | {ok}/{right} | {h_rep} ({h_ok}) of {h_n}, {h_right} right |")


if __name__ == "__main__":
    main()
