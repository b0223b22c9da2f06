"""Measure where the static model's floor belongs (`STATIC_FLOOR`: at or below it a cosine matches nothing).

For every query of the four public sets (`benchmarks.retrieval_sets`) it takes potion-base-8M's cosine with
every tool of the set. Pairs that are not gold say what a floor lets through: the share above the floor and
their 99th percentile. The needed tools BM25 cannot see (no word in common) say what the static model could
add: their median cosine. docs/retrieval.md quotes the result ("Why the default is BM25 + static").

    PYTHONPATH=src:. python scripts/measure_static_floor.py
"""

from __future__ import annotations

import numpy as np

from benchmarks.retrieval_sets import load_set, set_names
from toolproof.retrieval._bm25 import BM25Retriever
from toolproof.retrieval.static import STATIC_FLOOR, StaticRetriever


def measure(name: str) -> tuple[float, float, float, int]:
    """(share of non-gold pairs above the floor, their 99th percentile, median cosine of the needed tools BM25
    does not match, how many of those)."""
    entries, queries = load_set(name)
    position = {e.id: i for i, e in enumerate(entries)}
    static, bm25 = StaticRetriever(entries), BM25Retriever(entries)
    others: list[np.ndarray] = []
    unseen: list[float] = []
    for query in queries:
        cosines = static.scores(query.text)
        _, lexical = bm25.scored(query.text)
        gold = np.zeros(len(entries), dtype=bool)
        for step in query.steps:
            found = [position[i] for i in step if i in position]
            gold[found] = True
            if found and not lexical[found].any():
                unseen.append(max(float(cosines[i]) for i in found))
        others.append(cosines[~gold])
    every = np.concatenate(others)
    median = float(np.median(unseen)) if unseen else float("nan")
    return float((every > STATIC_FLOOR).mean()), float(np.percentile(every, 99)), median, len(unseen)


def main() -> None:
    print(f"floor in use: {STATIC_FLOOR}")
    print("| set | non-gold pairs above the floor | their 99th percentile | needed tools BM25 misses "
          "| their median cosine |")
    print("|---|---|---|---|---|")
    for name in set_names():
        share, p99, median, n = measure(name)
        print(f"| {name} | {share:.2%} | {p99:.2f} | {n} | {median:.2f} |", flush=True)


if __name__ == "__main__":
    main()
