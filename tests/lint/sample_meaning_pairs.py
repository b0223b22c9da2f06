"""Draw round `held-out-7-meaning`: pairs of BFCL functions, blind to the look-alike pass by meaning (seeded).

BFCL's files hold one small toolset per question, so the same job recurs across a file under other names
(`calculate_triangle_area`, `geometry.area_triangle`). Taking each file's functions as one catalogue (one
definition per name) gives pairs that do one job under unrelated names, which the MCP and ToolUniverse rounds
hardly had. The sampler sees only the definitions, with measures the pass by meaning does not use: plain TF-IDF
of the descriptions (no embedding, no name words) and parameter names. A pair of names is drawn once, whichever
file has it. Strata, at most `PER_FILE` pairs of one file each:

* `tfidf-top`: the pairs nearest by TF-IDF cosine (each tool's nearest neighbour, best first);
* `tfidf-nearest-random`: random nearest-neighbour pairs at TF-IDF cosine 0.2 to 0.5 (reworded, not copied);
* `params-overlap`: random pairs whose parameter names overlap by half or more (Jaccard), at TF-IDF cosine
  0.1 or more (this stratum shares a measure with the pass's schema signal, so its recall is reported apart);
* `random`: random pairs of one file.

Run `python -m tests.lint.sample_meaning_pairs > pairs.json`. The labels were written from that output before
the pass ran on the pairs.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
from collections import Counter
from functools import cache
from typing import Any, Final

from tests._data import corpus
from tests.lint.conftest import LABELS
from toolproof.lint import load_file
from toolproof.lint._model import ToolDef

SEED: Final = 7
ROUND: Final = "held-out-7-meaning"
#: Round `held-out-8-meaning` (seed 8): the same strata on the BFCL files round 7 did not draw from, drawn after
#: the schema signal was revised on round 7 (`python -m tests.lint.sample_meaning_pairs 8`).
SECOND: Final = (8, "held-out-8-meaning", ("BFCL_v4_live_multiple.json", "BFCL_v4_live_irrelevance.json",
                                          "BFCL_v4_parallel.json", "BFCL_v4_live_parallel_multiple.json",
                                          "BFCL_v4_live_relevance.json"))
#: Round `held-out-9-meaning` (seed 9): the MCP corpora taken whole, pairs of tools from two servers only (every
#: earlier round on them paired tools of one server), drawn after the second signal was revised on rounds 7 and
#: 8 (`python -m tests.lint.sample_meaning_pairs 9`). Pairs of names labelled in any earlier round are left out.
THIRD: Final = (9, "held-out-9-meaning", ("docker_mcp_registry_tools.jsonl", "livemcpbench_tools.jsonl",
                                          "mcp_reference_servers_tools.jsonl"))
#: Round `held-out-10-meaning` (seed 10): the same corpora and strata as round 9, drawn after the pass by meaning
#: was revised on round 9 (a server's prefix before the verb), leaving out every pair labelled before
#: (`python -m tests.lint.sample_meaning_pairs 10`).
FOURTH: Final = (10, "held-out-10-meaning", THIRD[2])
ROUNDS: Final = (ROUND, SECOND[1], THIRD[1], FOURTH[1])
TOOLSET: Final = "whole file"  # the toolset name of the labelled rows: every function of the file
SERVERS: Final = "whole corpus, two servers"  # ...of round 9: every tool of an MCP corpus, any server
FILES: Final = ("BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_parallel_multiple.json",
                "BFCL_v4_irrelevance.json", "BFCL_v4_live_simple.json", "BFCL_v4_simple_java.json",
                "BFCL_v4_simple_javascript.json")
STRATA: Final = (("tfidf-top", 24), ("tfidf-nearest-random", 18), ("params-overlap", 16), ("random", 12))
#: Round 9's strata: a first draw with round 7's (seen, never run through the pass) had 8 right pairs of 70, seven
#: of them one pair of servers (Playwright, Puppeteer), so nearest pairs weigh more and one pair of servers gives
#: at most `PER_SERVERS` of them.
STRATA_9: Final = (("tfidf-top", 40), ("tfidf-nearest-random", 12), ("params-overlap", 10), ("random", 8))
PER_SERVERS: Final = 3
PER_FILE: Final = 6
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(("the", "and", "for", "with", "from", "into", "that", "this", "are", "was", "its", "given",
                   "specified", "specific", "based", "using", "use", "which", "will", "can", "any", "all", "has",
                   "have", "not"))


@cache
def file_toolset(name: str) -> list[ToolDef]:
    """Every function of one BFCL file, one definition per name, in name order."""
    uniq: dict[str, ToolDef] = {}
    for t in load_file(corpus("bfcl", "v4", name)):
        uniq.setdefault(t.label, t)
    return [uniq[n] for n in sorted(uniq)]


@cache
def corpus_toolset(name: str) -> list[ToolDef]:
    """Every tool of one MCP corpus file, one definition per name (the first, in file order), in name order;
    `toolset` is the server."""
    uniq: dict[str, ToolDef] = {}
    for t in load_file(corpus("mcp_tools", name)):
        uniq.setdefault(t.label, t)
    return [uniq[n] for n in sorted(uniq)]


def _tfidf(texts: list[str]) -> list[dict[str, float]]:
    docs = [Counter(w for w in _WORD.findall(x.lower()) if len(w) > 2 and w not in _STOP) for x in texts]
    df = Counter(w for d in docs for w in d)
    out = []
    for d in docs:
        v = {w: (1 + math.log(c)) * math.log(len(docs) / df[w]) for w, c in d.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        out.append({w: x / norm for w, x in v.items()})
    return out


def _cos(a: dict[str, float], b: dict[str, float]) -> float:
    return sum(x * b.get(w, 0.0) for w, x in a.items())


def _params(t: ToolDef) -> frozenset[str]:
    props = t.schema.get("properties")
    return frozenset(re.sub(r"[^a-z0-9]", "", k.lower()) for k in props) if isinstance(props, dict) else frozenset()


def _view(t: ToolDef) -> dict[str, Any]:
    props = t.schema.get("properties")
    given = props if isinstance(props, dict) else {}
    params = {k: f"{v.get('type', '')}: {v.get('description', '')}"[:140] if isinstance(v, dict) else ""
              for k, v in given.items()}
    return {"name": t.label, "description": t.description_text, "params": params,
            "required": t.schema.get("required", [])}


def draw(seed: int = SEED, files: tuple[str, ...] = FILES, skip: frozenset[frozenset[str]] = frozenset(),
         servers: bool = False) -> list[dict[str, Any]]:
    """The sample: pairs of names in `skip` (labelled before) are left out. With `servers`, the files are MCP
    corpora and only pairs of two servers are drawn."""
    rng = random.Random(seed)
    pools: dict[str, list[tuple[float, str, int, int]]] = {s: [] for s, _ in STRATA}  # the same in both
    catalogue = corpus_toolset if servers else file_toolset
    per_file = 20 if servers else PER_FILE  # three files instead of five to seven
    strata = STRATA_9 if servers else STRATA
    by_servers: Counter[frozenset[str]] = Counter()
    for name in files:
        tools = catalogue(name)
        apart = [[servers and a.toolset == b.toolset for b in tools] for a in tools]
        vec = _tfidf([t.description_text for t in tools])
        params = [_params(t) for t in tools]
        n = len(tools)
        nearest: set[tuple[int, int]] = set()
        for i in range(n):
            best = max(((_cos(vec[i], vec[j]), j) for j in range(n) if j != i and not apart[i][j]), default=None)
            if best is not None and best[0] > 0:
                nearest.add((min(i, best[1]), max(i, best[1])))
        for i, j in sorted(nearest):
            c = _cos(vec[i], vec[j])
            pools["tfidf-top"].append((c, name, i, j))
            if 0.2 <= c < 0.5:
                pools["tfidf-nearest-random"].append((c, name, i, j))
        for i in range(n):
            for j in range(i + 1, n):
                if apart[i][j]:
                    continue
                union = params[i] | params[j]
                if union and len(params[i] & params[j]) / len(union) >= 0.5 and _cos(vec[i], vec[j]) >= 0.1:
                    pools["params-overlap"].append((_cos(vec[i], vec[j]), name, i, j))
        pools["random"] += [(0.0, name, i, j) for i, j in (sorted(rng.sample(range(n), 2)) for _ in range(40))
                            if not apart[i][j]]
    pools["tfidf-top"].sort(key=lambda p: (-p[0], p[1], p[2], p[3]))
    for s in ("tfidf-nearest-random", "params-overlap", "random"):
        pools[s].sort(key=lambda p: (p[1], p[2], p[3]))
        rng.shuffle(pools[s])
    picked: dict[frozenset[str], dict[str, Any]] = {}  # one pair of names once, whichever file has it
    for stratum, k in strata:
        per: Counter[str] = Counter()
        for score, name, i, j in pools[stratum]:
            if k == 0:
                break
            a, b = catalogue(name)[i], catalogue(name)[j]
            key = frozenset((a.label, b.label))
            if key in picked or key in skip or per[name] >= per_file:
                continue
            if servers and by_servers[frozenset((a.toolset, b.toolset))] >= PER_SERVERS:
                continue
            by_servers[frozenset((a.toolset, b.toolset))] += 1
            per[name] += 1
            k -= 1
            where = {"corpus": f"mcp_tools/{name}", "toolset": SERVERS, "servers": [a.toolset, b.toolset]} if (
                servers) else {"corpus": f"bfcl/v4/{name}", "toolset": TOOLSET}
            picked[key] = {**where, "stratum": stratum, "tfidf": round(score, 3), "a": _view(a), "b": _view(b)}
    return list(picked.values())


def _labelled(round_: str | None) -> frozenset[frozenset[str]]:
    """The pairs of names labelled in `round_` (in any round: None)."""
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return frozenset(frozenset((r["tool"], r["other"])) for r in rows
                     if isinstance(r.get("other"), str) and round_ in (None, r.get("round")))


def main() -> None:
    if sys.argv[1:] == ["8"]:
        seed, round_, files = SECOND
        out = draw(seed, files, _labelled(ROUND))
    elif sys.argv[1:] in (["9"], ["10"]):
        seed, round_, files = {"9": THIRD, "10": FOURTH}[sys.argv[1]]
        out = draw(seed, files, _labelled(None), servers=True)
    else:
        seed, round_ = SEED, ROUND
        out = draw()
    json.dump({"seed": seed, "round": round_, "pairs": out}, sys.stdout, indent=1, ensure_ascii=False)
    print(f"{len(out)} pairs", file=sys.stderr)


if __name__ == "__main__":
    main()
