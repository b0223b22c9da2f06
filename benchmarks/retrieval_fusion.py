"""Fusion rules compared held out: weights chosen on one public set, reported on the others.

For each set of `benchmarks.retrieval_sets` (corpus alone, or hidden in a pool) the per-query scores of BM25,
the static model (potion-base-8M) and, when installed, MiniLM are computed once; each fusion rule then ranks
through the same `ToolIndex` pipeline (group score, prerequisites, duplicate collapsing, floors). A rule with a
weight has it chosen on the tuning set only (best recall@5 there) and is then reported on every set; the tuning
set's own number is marked.

    PYTHONPATH=src:. python benchmarks/retrieval_fusion.py [--tune SET] [--pool N] [--tune-pool N] [--seed S]
        [--cache-dir DIR] [--no-minilm] [--rules 'NAME;NAME'] [--json F] [--per-task]

`--pool N` hides each set among distractors up to N tools, built as `toolproof eval retrieval --pool-size N`
builds them (`benchmarks.retrieval_table.DISTRACTORS`, shuffled with `--seed`, default 0). The weights are
chosen on the tuning set at that pool size unless `--tune-pool` names another: `--tune-pool 0` chooses them on
the tuning set's corpus alone, as the library's were, and judges them at the pool.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.retrieval_sets import load_set, set_names
from toolproof.retrieval._bm25 import BM25Retriever
from toolproof.retrieval._evaluate import QueryResult, judge, summarize
from toolproof.retrieval._hybrid import confidence, gated, lift, linear, minmax_top, rrf, weighted
from toolproof.retrieval._index import ToolIndex
from toolproof.retrieval.static import StaticRetriever

Array = npt.NDArray[np.float32]
#: The embedding weights tried (BM25's is 1): what a cosine adds to BM25 scaled to a best of 1.
GRID = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.5, 2.0)
#: RRF's k tried (the static list's weight is 1/4 of BM25's, the best of 1/4, 1/2, 1 in a scratch run).
RRF_K = (1.0, 5.0, 10.0, 20.0, 30.0, 60.0, 100.0)
#: Hard gate: BM25 alone when its best score is at least this many times its second, else linear at 0.5.
GATE = (1.05, 1.1, 1.2, 1.3, 1.5, 2.0)


class _Fixed:
    """Scores computed beforehand, served to `ToolIndex` as its retriever (so the pipeline is the real one)."""

    name = "fixed"

    def __init__(self, table: dict[str, tuple[Array, npt.NDArray[np.bool_]]]) -> None:
        self._table = table

    def scores(self, query: str) -> Array:
        return self._table[query][0]

    def scored(self, query: str) -> tuple[Array, npt.NDArray[np.bool_]]:
        return self._table[query]


def _raw(name: str, cache: str | None, with_minilm: bool, pool: int = 0, seed: int = 0) -> dict[str, Any]:
    entries, gold = load_set(name)
    if pool > len(entries):
        from benchmarks.retrieval_table import DISTRACTORS
        from toolproof.retrieval._corpora import build_pool, load_distractors

        entries = build_pool(entries, load_distractors(DISTRACTORS), pool, seed=seed)
    index = ToolIndex(entries)  # the entries as the index holds them (prerequisites inferred, ids unique)
    held = index.entries
    bm25, static = BM25Retriever(held), StaticRetriever(held)
    minilm = None
    try:
        if not with_minilm:
            raise ImportError("--no-minilm")
        from toolproof.retrieval._embeddings import EmbeddingRetriever

        minilm = EmbeddingRetriever(held, cache_dir=cache)
    except ImportError:
        pass
    rows = []
    for q in gold:
        lex, lex_match = bm25.scored(q.text)
        sem, sem_match = static.scored(q.text)
        dense = minilm.scored(q.text) if minilm is not None else None
        rows.append((q, lex, lex_match, sem, sem_match, dense))
    return {"index": index, "rows": rows, "minilm": minilm is not None}


Mask = npt.NDArray[np.bool_]
#: A fusion rule: (score lists, their match masks, the tuned parameter) -> fused scores.
Rule = Callable[[Sequence[Array], Sequence[Mask], float], Array]


def _evaluate(data: dict[str, Any], parts: Sequence[str], rule: Rule, weight: float) -> dict[str, float]:
    report = summarize(_judged(data, parts, rule, weight))
    return {"recall@5": report.recall[5], "all@5": report.all_at[5], "any@5": report.any_at[5], "mrr": report.mrr}


def _recall5(result: QueryResult) -> float:
    return sum(1 for at in result.steps_found_at if at is not None and at <= 5) / max(1, len(result.steps_found_at))


def _judged(data: dict[str, Any], parts: Sequence[str], rule: Rule, weight: float) -> list[QueryResult]:
    table = {}
    for q, lex, lex_match, sem, sem_match, dense in data["rows"]:
        lists = {"bm25": (lex, lex_match), "static": (sem, sem_match)}
        if dense is not None:
            lists["minilm"] = dense
        chosen = [lists[p] for p in parts]
        fused = rule([s for s, _ in chosen], [m for _, m in chosen], weight)
        matched = np.logical_or.reduce([m for _, m in chosen])
        table[q.text] = (fused, matched)
    index: ToolIndex = data["index"]
    index._retriever = _Fixed(table)  # precomputed scores through the real pipeline
    return [judge(q, index.search_ids(q.text, 10), 0.0) for q, *_ in data["rows"]]


def _zscore(scores: Array, depth: int = 100) -> Array:
    """Scores standardised over their own top `depth` (mean 0, deviation 1 there)."""
    d = min(depth, len(scores))
    top = np.partition(scores, len(scores) - d)[len(scores) - d :]
    return ((scores - top.mean()) / (top.std() + 1e-6)).astype(np.float32)


def _hard_gate(s: Sequence[Array], ratio: float) -> Array:
    """BM25 alone when its best score is at least `ratio` times its second, else linear at weight 0.5."""
    top = np.sort(s[0])[-2:]
    best, second = float(top[-1]), float(top[0]) if len(top) > 1 else 0.0
    return s[0] if best > 0 and best >= ratio * second else linear(s, [1.0, 0.5])


def _gated_on_matches(s: Sequence[Array], m: Sequence[Mask], w: float) -> Array:
    """`gated` with BM25's confidence over the tools it matches only (a tool sharing nothing but a number with
    the request, "12" or "20th", does not count in how far BM25's best stands out)."""
    trust = confidence(np.where(m[0], s[0], np.float32(0.0)))
    return linear(s, [1.0, w * (1.0 - trust)])


def _or(s: Sequence[Array], m: Sequence[Mask], w: float) -> Array:
    """BM25 scaled to a best of 1 (b), plus w x cosine x (1 - b): `lift` without its confidence."""
    top = float(s[0].max())
    b = s[0] / np.float32(top) if top > 0 else s[0]
    out: Array = (b + np.float32(w) * s[1] * (np.float32(1.0) - b)).astype(np.float32)
    return out


def _rules() -> dict[str, tuple[Sequence[str], Rule, Sequence[float]]]:
    """name -> (retrievers, rule(score lists, masks, parameter), the parameter's grid; empty: nothing to tune)."""
    both = ["bm25", "static"]
    return {
        "BM25": (["bm25"], lambda s, m, w: s[0], ()),
        "static": (["static"], lambda s, m, w: s[0], ()),
        "MiniLM": (["minilm"], lambda s, m, w: s[0], ()),
        "BM25+static weighted": (both, lambda s, m, w: weighted(s), ()),
        "BM25+static rrf, k=60": (both, lambda s, m, w: rrf(s, [1.0, 1.0]), ()),
        "BM25+static rrf, k tuned": (both, lambda s, m, w: rrf(s, [1.0, 0.25], k=int(w)), RRF_K),
        "BM25+static minmax sum": (both, lambda s, m, w: minmax_top(s[0]) + np.float32(w) * minmax_top(s[1]), GRID),
        "BM25+static z-score sum": (both, lambda s, m, w: _zscore(s[0]) + np.float32(w) * _zscore(s[1]), GRID),
        "BM25+static hard gate (ratio)": (both, lambda s, m, w: _hard_gate(s, w), GATE),
        "BM25+static linear": (both, lambda s, m, w: linear(s, [1.0, w]), GRID),
        "BM25+static gated": (both, lambda s, m, w: gated(s, [1.0, w]), GRID),
        "BM25+static gated, confidence over matches": (both, _gated_on_matches, GRID),
        "BM25+static or": (both, _or, GRID),
        "BM25+static lift": (both, lambda s, m, w: lift(s, m, [1.0, w]), GRID),
        "BM25+MiniLM weighted": (["bm25", "minilm"], lambda s, m, w: weighted(s), ()),
        "BM25+MiniLM linear": (["bm25", "minilm"], lambda s, m, w: linear(s, [1.0, w]), GRID),
        "BM25+MiniLM gated": (["bm25", "minilm"], lambda s, m, w: gated(s, [1.0, w]), GRID),
        "BM25+MiniLM lift": (["bm25", "minilm"], lambda s, m, w: lift(s, m, [1.0, w]), GRID),
        "BM25+static+MiniLM linear": (["bm25", "static", "minilm"], lambda s, m, w: linear(s, [1.0, w / 2, w / 2]),
                                      GRID),
    }


def _print_per_task(data: dict[str, Any], label: str, parts: Sequence[str], rule: Rule, weight: float) -> None:
    for name, d in data.items():
        base = _judged(d, ["bm25"], lambda s, m, w: s[0], 0.0)
        for q, b, r in zip((row[0] for row in d["rows"]), base, _judged(d, parts, rule, weight), strict=True):
            if _recall5(r) != _recall5(b):
                print(f"  {label} | {name} | {_recall5(r) - _recall5(b):+.3f} | {q.text[:100]!r}")


def main() -> None:
    tune = sys.argv[sys.argv.index("--tune") + 1] if "--tune" in sys.argv else "StableToolBench"
    cache = sys.argv[sys.argv.index("--cache-dir") + 1] if "--cache-dir" in sys.argv else None
    pool = int(sys.argv[sys.argv.index("--pool") + 1]) if "--pool" in sys.argv else 0
    only = sys.argv[sys.argv.index("--rules") + 1].split(";") if "--rules" in sys.argv else None
    tune_pool = int(sys.argv[sys.argv.index("--tune-pool") + 1]) if "--tune-pool" in sys.argv else pool
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 0
    data = {name: _raw(name, cache, "--no-minilm" not in sys.argv, pool, seed) for name in set_names()}
    tuning = data[tune] if tune_pool == pool else _raw(tune, cache, "--no-minilm" not in sys.argv, tune_pool, seed)
    have_minilm = all(d["minilm"] for d in data.values())
    print(f"date {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}; weights tuned on {tune} only; "
          f"pool {pool or 'corpus alone'} (seed {seed}); tuned at pool {tune_pool or 'corpus alone'}")
    names = set_names()
    print("| rule | tuned parameter | " + " | ".join(f"{n}{' (tuned)' if n == tune else ''}" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    out = []
    for label, (parts, rule, grid) in _rules().items():
        if ("minilm" in parts and not have_minilm) or (only is not None and label not in only):
            continue
        weight = 0.0
        if grid:  # best recall@5 on the tuning set; a tie goes to the smaller parameter
            weight = max(grid, key=lambda w: (round(_evaluate(tuning, parts, rule, w)["recall@5"], 6), -w))
        scores = {n: _evaluate(data[n], parts, rule, weight) for n in names}
        out.append({"rule": label, "weight": weight if grid else None, "tuned_on": tune, "tune_pool": tune_pool,
                    "pool": pool, "seed": seed, "sets": scores})
        if "--per-task" in sys.argv and label != "BM25":  # which tasks this rule wins or loses against BM25
            _print_per_task(data, label, parts, rule, weight)
        cells = " | ".join(f"{scores[n]['recall@5']:.3f} ({scores[n]['all@5']:.2f}/{scores[n]['any@5']:.2f})"
                           for n in names)
        print(f"| {label} | {weight if grid else '-'} | {cells} |", flush=True)
    if "--json" in sys.argv:
        Path(sys.argv[sys.argv.index("--json") + 1]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
