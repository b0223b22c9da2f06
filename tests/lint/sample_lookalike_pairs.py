"""Draw the held-out look-alike sample from the MCP corpora, blind to the rules (seeded, reproducible).

The labels that measure TP402 and TP405 must not come from their own output, or precision is judged only where
the rules already fire and recall cannot be measured at all. This sampler sees only the definitions: per
toolset, the pairs whose descriptions are nearest by all-MiniLM-L6-v2 cosine or by word-set Jaccard, some random
pairs of one toolset, random pairs of read tools on one object (`get_x`, `list_xs`,
`search_x`), and the tightest triples (for the cluster rule). Pairs labelled in any earlier round are
left out. Run `python -m tests.lint.sample_lookalike_pairs > pairs.json` (needs the embeddings extra);
`... tooluniverse > pairs.json` draws round `held-out-6-tooluniverse` from ToolUniverse's catalogue instead
(four toolsets, so more pairs per toolset and fewer in all).
"""

from __future__ import annotations

import itertools
import json
import random
import re
import sys
from collections import defaultdict
from typing import Any, Final

from tests._data import corpus
from tests.lint import tooluniverse_toolsets
from tests.lint.conftest import LABELS
from toolproof.lint import load_file
from toolproof.lint._model import ToolDef
from toolproof.retrieval._embeddings import MiniLMEncoder

SEED = 5
ROUND = "held-out-5-lookalike"  # the round this sample became; it and later rounds must not change the draw
LATER = (ROUND, "spotted-lookalike-5", "held-out-6-tooluniverse", "held-out-6-tooluniverse-old", "spotted-lookalike-6")
COSINE_TOP, COSINE_RANDOM, JACCARD_TOP, RANDOM_PAIRS, NAME_PAIRS, TRIPLES = 22, 8, 14, 10, 14, 6
PER_TOOLSET = 2  # at most this many pairs of one toolset per stratum, so no one server fills the sample
_WORD = re.compile(r"[a-z0-9]+")
_READ = frozenset(("get", "list", "fetch", "search", "retrieve", "read", "find", "show", "query", "lookup", "view",
                   "describe", "browse", "load"))


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if len(w) > 2)


def _object_words(name: str) -> tuple[str, ...]:
    """A name's words without read actions or a plural s: `get_tag` and `list_tags` both give ("tag",)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return tuple(w.lower().rstrip("s") for w in re.split(r"[^A-Za-z0-9]+", spaced)
                 if w and w.lower() not in _READ)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _labelled_before() -> set[tuple[str, str, frozenset[str]]]:
    seen = set()
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        r = json.loads(line) if line.strip() else {}
        if r.get("code") not in ("TP402", "TP405") or r.get("round") in LATER:
            continue
        others = r.get("other") or re.findall(r"looks like '([^']+)'", r.get("message", ""))[:1]
        for o in [others] if isinstance(others, str) else others:
            seen.add((r["corpus"], r["toolset"], frozenset((r["tool"], o))))
    return seen


#: The ToolUniverse draw: (seed, round, sizes of the six strata as above, pairs per toolset per stratum).
TOOLUNIVERSE: Final = (6, "held-out-6-tooluniverse", (12, 6, 8, 6, 8, 4), 8)


def _tooluniverse() -> list[tuple[str, str, list[ToolDef]]]:
    out = []
    for name, tools in tooluniverse_toolsets.toolsets().items():
        uniq = {t.label: t for t in tools}
        if len(uniq) >= 2:
            out.append((tooluniverse_toolsets.SOURCE + "/" + name + ".json", name, [uniq[n] for n in sorted(uniq)]))
    return out


def _toolsets() -> list[tuple[str, str, list[ToolDef]]]:
    if CATALOGUE == "tooluniverse":
        return _tooluniverse()
    out = []
    for path in sorted(corpus("mcp_tools").glob("*.jsonl")):
        groups: dict[str, list[ToolDef]] = defaultdict(list)
        for t in load_file(path):
            if isinstance(t.name, str):
                groups[t.toolset].append(t)
        for name, tools in sorted(groups.items()):
            names = [t.name for t in tools]
            if len(set(names)) >= 2:
                uniq = {t.name: t for t in tools}  # one definition per name
                out.append((f"mcp_tools/{path.name}", name, [uniq[n] for n in sorted(uniq)]))
    return out


def _view(t: ToolDef) -> dict[str, Any]:
    found = t.schema.get("properties")
    props: dict[str, Any] = found if isinstance(found, dict) else {}
    params = {k: (v.get("description", "") if isinstance(v, dict) else "")[:160] for k, v in props.items()}
    return {"name": t.name, "description": t.description_text, "params": params}


CATALOGUE = "mcp"


def main() -> None:
    global CATALOGUE, SEED, COSINE_TOP, COSINE_RANDOM, JACCARD_TOP, RANDOM_PAIRS, NAME_PAIRS, TRIPLES, PER_TOOLSET
    if sys.argv[1:] == ["tooluniverse"]:
        CATALOGUE = "tooluniverse"
        SEED, _, sizes, PER_TOOLSET = TOOLUNIVERSE
        COSINE_TOP, COSINE_RANDOM, JACCARD_TOP, RANDOM_PAIRS, NAME_PAIRS, TRIPLES = sizes
    rng = random.Random(SEED)
    seen = _labelled_before()
    encoder = MiniLMEncoder()
    cos_pairs: list[tuple[float, str, str, int, int]] = []
    jac_pairs: list[tuple[float, str, str, int, int]] = []
    all_pairs: list[tuple[str, str, int, int]] = []
    name_pairs: list[tuple[str, str, int, int]] = []
    triples: list[tuple[float, str, str, tuple[int, int, int]]] = []
    for corp, ts, tools in _toolsets():
        texts = [t.description_text or t.label for t in tools]
        vec = encoder.encode(texts)
        sim = vec @ vec.T
        words = [_words(x) for x in texts]
        n = len(tools)
        for i, j in itertools.combinations(range(n), 2):
            if (corp, ts, frozenset((tools[i].label, tools[j].label))) not in seen:
                all_pairs.append((corp, ts, i, j))
                if _object_words(tools[i].label) == _object_words(tools[j].label) != ():
                    name_pairs.append((corp, ts, i, j))  # read tools on one object: get_x, list_x, search_x
        for measure, bucket in (("cosine", cos_pairs), ("jaccard", jac_pairs)):
            nearest = set()
            for i in range(n):
                score = [(float(sim[i, j]) if measure == "cosine" else _jaccard(words[i], words[j]), j)
                         for j in range(n) if j != i]
                j = max(score)[1]
                nearest.add((min(i, j), max(i, j)))
            for i, j in nearest:
                s = float(sim[i, j]) if measure == "cosine" else _jaccard(words[i], words[j])
                if (corp, ts, frozenset((tools[i].label, tools[j].label))) not in seen:
                    bucket.append((s, corp, ts, i, j))
        if n >= 3:
            best = max(((min(sim[a, b], sim[a, c], sim[b, c]), (a, b, c))
                        for a, b, c in itertools.combinations(range(n), 3)), default=None)
            if best is not None:
                triples.append((float(best[0]), corp, ts, best[1]))
    tools_of = {(c, ts): tools for c, ts, tools in _toolsets()}
    picked: dict[tuple[str, str, int, int], str] = {}

    def take(items: list[tuple[float, str, str, int, int]], k: int, stratum: str) -> None:
        per: dict[str, int] = defaultdict(int)
        for _, c, ts, i, j in items:
            if k == 0:
                return
            if (c, ts, i, j) in picked or per[ts] >= PER_TOOLSET:
                continue
            picked[(c, ts, i, j)] = stratum
            per[ts] += 1
            k -= 1

    cos_pairs.sort(reverse=True)
    take(cos_pairs, COSINE_TOP, "cosine-top")
    rest = [p for p in cos_pairs if (p[1], p[2], p[3], p[4]) not in picked]
    rng.shuffle(rest)
    take(rest, COSINE_RANDOM, "cosine-nearest-random")
    jac_pairs.sort(reverse=True)
    take(jac_pairs, JACCARD_TOP, "jaccard-top")
    rng.shuffle(all_pairs)
    take([(0.0, *p) for p in all_pairs], RANDOM_PAIRS, "random")
    rng.shuffle(name_pairs)
    take([(0.0, *p) for p in name_pairs], NAME_PAIRS, "name-same-object")
    triples.sort(reverse=True)
    out: dict[str, Any] = {"seed": SEED, "pairs": [], "triples": []}
    for (c, ts, i, j), stratum in picked.items():
        tools = tools_of[(c, ts)]
        out["pairs"].append({"corpus": c, "toolset": ts, "stratum": stratum, "a": _view(tools[i]),
                             "b": _view(tools[j])})
    for s, c, ts, idx in triples[:TRIPLES]:
        out["triples"].append({"corpus": c, "toolset": ts, "min_cosine": round(s, 3),
                               "tools": [_view(tools_of[(c, ts)][m]) for m in idx]})
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print(f"{len(out['pairs'])} pairs, {len(out['triples'])} triples", file=sys.stderr)


if __name__ == "__main__":
    main()
