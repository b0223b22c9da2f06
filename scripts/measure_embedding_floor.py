"""Measure where the embedding retriever's floor belongs (the cosine at or below which search returns nothing).

For every query of the retrieval sets (LiveMCPBench, StableToolBench, API-Bank level 2) it takes the cosine
between the query and each needed tool (the best of a step's alternatives), whether that tool ranks in the
top 10 (the deepest cut the retrieval table reports), and the cosine between the query and every tool of its
corpus. A floor costs recall only for needed tools that rank in the top 10 with a cosine at or below it; it
prunes the pairs at or below it. Prints both for a few candidate floors; docs/retrieval.md quotes the
result. The end-to-end check is the retrieval table itself (benchmarks/retrieval_table.py), before and
after: with the group score a tool can rank higher than its cosine alone puts it.

    PYTHONPATH=src:. python scripts/measure_embedding_floor.py [--cache-dir DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from tests._data import CORPORA
from toolproof.retrieval._corpora import load_entries, load_queries
from toolproof.retrieval._embeddings import EMBEDDING_FLOOR, EmbeddingRetriever

R = CORPORA / "retrieval"
SETS = {
    "LiveMCPBench": (R / "livemcpbench_corpus.jsonl", R / "livemcpbench_queries.jsonl"),
    "StableToolBench": (R / "stabletoolbench_corpus.jsonl", R / "stabletoolbench_queries.jsonl"),
    "API-Bank lv2": (R / "apibank_corpus.jsonl", R / "apibank_lv2_queries.jsonl"),
}
CANDIDATES = (0.0, 0.05, 0.1, 0.15)
TOP = 10


def measure(corpus: Path, queries: Path, cache_dir: str | None) -> tuple[list[float], list[float], list[float]]:
    """(cosine of each needed step's best tool, the same for those ranked in the top 10, every pair's cosine)."""
    entries = load_entries(corpus)
    position = {e.id: i for i, e in enumerate(entries)}
    retriever = EmbeddingRetriever(entries, cache_dir=cache_dir)
    gold: list[float] = []
    gold_top: list[float] = []
    every: list[float] = []
    for query in load_queries(queries):
        scores = retriever.scores(query.text)
        every.extend(scores.tolist())
        cut = float(np.sort(scores)[-TOP]) if len(scores) >= TOP else float("-inf")
        for step in query.steps:
            found = [float(scores[position[i]]) for i in step if i in position]
            if found:
                gold.append(max(found))
                if max(found) >= cut:
                    gold_top.append(max(found))
    return gold, gold_top, every


def main() -> None:
    cache = sys.argv[sys.argv.index("--cache-dir") + 1] if "--cache-dir" in sys.argv else None
    print(f"floor in use: {EMBEDDING_FLOOR}")
    for name, (corpus, queries) in SETS.items():
        gold, top, every = measure(corpus, queries, cache)
        g, t, e = np.array(gold), np.array(top), np.array(every)
        print(f"{name}: {len(g)} needed steps (median cosine {np.median(g):.3f}), {len(t)} of them in the top "
              f"{TOP}; all query-tool pairs: median cosine {np.median(e):.3f}")
        for f in CANDIDATES:
            print(f"  floor {f:+.2f}: needed steps in the top {TOP} lost {(t <= f).sum()} of {len(t)}; "
                  f"query-tool pairs pruned {(e <= f).mean():.1%}")


if __name__ == "__main__":
    main()
