"""Fusion rules compared held out: weights chosen on one public set, reported on the others.

For each set of `benchmarks.retrieval_sets` (corpus alone) the per-query scores of BM25, the static model
(potion-base-8M) and, when installed, MiniLM are computed once; each fusion rule then ranks through the same
`ToolIndex` pipeline (group score, prerequisites, duplicate collapsing, floors). A rule with a weight has it
chosen on the tuning set only (best recall@5 there) and is then reported on every set; the tuning set's own
number is marked.

    PYTHONPATH=src:. python benchmarks/retrieval_fusion.py [--tune SET] [--cache-dir DIR] [--no-minilm] [--json F]
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
from toolproof.retrieval.bm25 import BM25Retriever
from toolproof.retrieval.evaluate import judge, summarize
from toolproof.retrieval.hybrid import gated, linear, minmax_top, rrf, weighted
from toolproof.retrieval.index import ToolIndex
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


def _raw(name: str, cache: str | None, with_minilm: bool) -> dict[str, Any]:
    entries, gold = load_set(name)
    index = ToolIndex(entries)  # the entries as the index holds them (prerequisites inferred, ids unique)
    held = index.entries
    bm25, static = BM25Retriever(held), StaticRetriever(held)
    minilm = None
    try:
        if not with_minilm:
            raise ImportError("--no-minilm")
        from toolproof.retrieval.embeddings import EmbeddingRetriever

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


Rule = Callable[[Sequence[Array], float], Array]


def _evaluate(data: dict[str, Any], parts: Sequence[str], rule: Rule, weight: float) -> dict[str, float]:
    table = {}
    for q, lex, lex_match, sem, sem_match, dense in data["rows"]:
        lists = {"bm25": (lex, lex_match), "static": (sem, sem_match)}
        if dense is not None:
            lists["minilm"] = dense
        chosen = [lists[p] for p in parts]
        fused = rule([s for s, _ in chosen], weight)
        matched = np.logical_or.reduce([m for _, m in chosen])
        table[q.text] = (fused, matched)
    index: ToolIndex = data["index"]
    index._retriever = _Fixed(table)  # precomputed scores through the real pipeline
    results = [judge(q, index.search_ids(q.text, 10), 0.0) for q, *_ in data["rows"]]
    report = summarize(results)
    return {"recall@5": report.recall[5], "all@5": report.all_at[5], "any@5": report.any_at[5], "mrr": report.mrr}


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


def _rules() -> dict[str, tuple[Sequence[str], Rule, Sequence[float]]]:
    """name -> (retrievers, rule(score lists, parameter), the parameter's grid; empty: nothing to tune)."""
    return {
        "BM25": (["bm25"], lambda s, w: s[0], ()),
        "static": (["static"], lambda s, w: s[0], ()),
        "MiniLM": (["minilm"], lambda s, w: s[0], ()),
        "BM25+static weighted": (["bm25", "static"], lambda s, w: weighted(s), ()),
        "BM25+static rrf, k=60": (["bm25", "static"], lambda s, w: rrf(s, [1.0, 1.0]), ()),
        "BM25+static rrf, k tuned": (["bm25", "static"], lambda s, w: rrf(s, [1.0, 0.25], k=int(w)), RRF_K),
        "BM25+static minmax sum": (["bm25", "static"],
                                   lambda s, w: minmax_top(s[0]) + np.float32(w) * minmax_top(s[1]), GRID),
        "BM25+static z-score sum": (["bm25", "static"],
                                    lambda s, w: _zscore(s[0]) + np.float32(w) * _zscore(s[1]), GRID),
        "BM25+static hard gate (ratio)": (["bm25", "static"], _hard_gate, GATE),
        "BM25+static linear": (["bm25", "static"], lambda s, w: linear(s, [1.0, w]), GRID),
        "BM25+static gated": (["bm25", "static"], lambda s, w: gated(s, [1.0, w]), GRID),
        "BM25+MiniLM weighted": (["bm25", "minilm"], lambda s, w: weighted(s), ()),
        "BM25+MiniLM linear": (["bm25", "minilm"], lambda s, w: linear(s, [1.0, w]), GRID),
        "BM25+MiniLM gated": (["bm25", "minilm"], lambda s, w: gated(s, [1.0, w]), GRID),
        "BM25+static+MiniLM linear": (["bm25", "static", "minilm"], lambda s, w: linear(s, [1.0, w / 2, w / 2]),
                                      GRID),
    }


def main() -> None:
    tune = sys.argv[sys.argv.index("--tune") + 1] if "--tune" in sys.argv else "StableToolBench"
    cache = sys.argv[sys.argv.index("--cache-dir") + 1] if "--cache-dir" in sys.argv else None
    data = {name: _raw(name, cache, "--no-minilm" not in sys.argv) for name in set_names()}
    have_minilm = all(d["minilm"] for d in data.values())
    print(f"date {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}; weights tuned on {tune} only")
    names = set_names()
    print("| rule | tuned parameter | " + " | ".join(f"{n}{' (tuned)' if n == tune else ''}" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    out = []
    for label, (parts, rule, grid) in _rules().items():
        if "minilm" in parts and not have_minilm:
            continue
        weight = 0.0
        if grid:  # best recall@5 on the tuning set; a tie goes to the smaller parameter
            weight = max(grid, key=lambda w: (round(_evaluate(data[tune], parts, rule, w)["recall@5"], 6), -w))
        scores = {n: _evaluate(data[n], parts, rule, weight) for n in names}
        out.append({"rule": label, "weight": weight if grid else None, "tuned_on": tune, "sets": scores})
        cells = " | ".join(f"{scores[n]['recall@5']:.3f} ({scores[n]['all@5']:.2f}/{scores[n]['any@5']:.2f})"
                           for n in names)
        print(f"| {label} | {weight if grid else '-'} | {cells} |", flush=True)
    if "--json" in sys.argv:
        Path(sys.argv[sys.argv.index("--json") + 1]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
