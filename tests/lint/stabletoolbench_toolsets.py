"""StableToolBench's RapidAPI catalogue as lint toolsets: the endpoints of one RapidAPI tool are served together.

Labelled held out in round 5; round 6 tuned the look-alike rules on those labels, so they are tuning data now
(rounds `tuning-5-stb`, `tuning-5-stb-rest`) and ToolUniverse's catalogue is the held-out one.
Names are kept as published (`/get_movies_by_name`, `Get all Recipes 2`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache
from typing import Any

from tests._data import corpus
from toolproof.lint import Finding, LintConfig, lint_tooldefs
from toolproof.lint._model import ToolDef

SOURCE = "retrieval/stabletoolbench_corpus.jsonl"


@cache
def toolsets() -> dict[str, list[ToolDef]]:
    groups: dict[str, list[ToolDef]] = defaultdict(list)
    for line in corpus(*SOURCE.split("/")).read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        params = d["required_parameters"] + d["optional_parameters"]
        schema = {"type": "object", "required": [p["name"] for p in d["required_parameters"]],
                  "properties": {p["name"]: {"type": "string", "description": p.get("description", "")}
                                 for p in params}}
        groups[d["tool_name"]].append(ToolDef(name=d["api_name"], description=d["description"],
                                              input_schema=schema, toolset=d["tool_name"], source=SOURCE))
    return dict(groups)


def overlap_findings() -> list[Finding]:
    """TP402 and TP405 on every RapidAPI tool of the catalogue."""
    config = LintConfig(select=("TP402", "TP405"))
    return [f for tools in toolsets().values() for f in lint_tooldefs(tools, config) if f.code in ("TP402", "TP405")]


def sample_reported(seed: int = 5, per_pass: int = 16, clusters: int = 8) -> dict[str, list[Any]]:
    """The seeded sample of reported pairs (up to `per_pass` from each TP402 pass) and clusters that round
    `tuning-5-stb` labels (held out until the look-alike fixes of round 6 were tuned on it). Run
    `python -m tests.lint.stabletoolbench_toolsets` to print it."""
    import random
    import re

    pairs: dict[tuple[str, frozenset[str]], str] = {}
    groups: set[tuple[str, tuple[str, ...]]] = set()
    for f in overlap_findings():
        named = re.findall(r"'([^']+)'", f.message)
        if f.code == "TP402":
            pairs.setdefault((f.toolset, frozenset((f.tool, named[0]))),
                             "name" if "(name similarity" in f.message else "description")
        else:
            groups.add((f.toolset, tuple(sorted(re.findall(r"'([^']+)'", f.message.split(":", 1)[1])))))
    rng = random.Random(seed)
    out: dict[str, list[Any]] = {"pairs": [], "clusters": []}
    for which in ("name", "description"):
        keys = sorted((k for k, v in pairs.items() if v == which), key=lambda k: (k[0], sorted(k[1])))
        rng.shuffle(keys)
        out["pairs"] += [(which, ts, sorted(names)) for ts, names in keys[:per_pass]]
    found = sorted(groups)
    rng.shuffle(found)
    out["clusters"] = [list(c) for c in found[:clusters]]
    return out


BOILERPLATE = ("Carbon management", "Learn to read and write Japanese kanji")  # one sentence for every endpoint


def rest_of_description_pass() -> list[tuple[str, str, str]]:
    """Round `tuning-5-stb-rest`: every description-pass pair outside the sample and outside the two
    toolsets whose endpoints all share one sentence (72 of the 115 pairs, all alike for the same reason)."""
    import re

    sampled = {(ts, frozenset(names)) for which, ts, names in sample_reported()["pairs"]}
    out: set[tuple[str, str, str]] = set()
    for f in overlap_findings():
        if f.code != "TP402" or "(name similarity" in f.message or f.toolset in BOILERPLATE:
            continue
        a, b = sorted((f.tool, re.findall(r"'([^']+)'", f.message)[0]))
        if (f.toolset, frozenset((a, b))) not in sampled:
            out.add((f.toolset, a, b))
    return sorted(out)




if __name__ == "__main__":
    print(json.dumps(sample_reported(), indent=1, ensure_ascii=False))
