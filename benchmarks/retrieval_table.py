"""The recall table of docs/retrieval.md: every corpus x pool size x retriever, through `evaluate_files`
(the same code as `toolproof eval retrieval`). Slow (minutes; embeddings encode ~7,500 tool texts once).

    PYTHONPATH=src:. python benchmarks/retrieval_table.py [--cache-dir DIR] [--json FILE]
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from tests._data import CORPORA
from toolproof.retrieval.evaluate import evaluate_files

R = CORPORA / "retrieval"
SETS = {
    "LiveMCPBench": (R / "livemcpbench_corpus.jsonl", R / "livemcpbench_queries.jsonl"),
    "StableToolBench": (R / "stabletoolbench_corpus.jsonl", R / "stabletoolbench_queries.jsonl"),
    "API-Bank lv2": (R / "apibank_corpus.jsonl", R / "apibank_lv2_queries.jsonl"),
}
DISTRACTORS = [CORPORA / "mcp_tools", CORPORA / "bfcl" / "v4", *(c for c, _ in SETS.values())]
CONFIGS = [  # (label, retriever, options)
    ("BM25 plain", "bm25", {"prerequisites": False, "group_weight": 0.0}),
    ("BM25", "bm25", {}),
    ("MiniLM", "embeddings", {}),
    ("hybrid", "hybrid", {}),
    ("BM25 + history", "bm25", {"history": True}),
]


def main() -> None:
    cache = sys.argv[sys.argv.index("--cache-dir") + 1] if "--cache-dir" in sys.argv else None
    rows: list[dict[str, Any]] = []
    print(f"date {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}", flush=True)
    print("| corpus (pool) | retriever | all@5 | any@5 | recall@5 | all@10 | any@10 | MRR | p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, (corpus, queries) in SETS.items():
        for pool in (0, 1_000, 10_000):
            if pool and pool <= sum(1 for line in corpus.open(encoding="utf-8") if line.strip()):
                continue  # a pool no larger than the corpus is the corpus itself
            for label, retriever, options in CONFIGS:
                run = evaluate_files(corpus, queries, retriever=retriever, pool_size=pool, distractors=DISTRACTORS,
                                     cache_dir=cache, **options)
                d = run.report.as_dict()
                rows.append({"corpus": name, "pool": run.pool_size, "config": label, **d})
                print(f"| {name} ({run.pool_size:,}) | {label} | {d['all@5']:.2f} | {d['any@5']:.2f} | "
                      f"{d['recall@5']:.2f} | {d['all@10']:.2f} | {d['any@10']:.2f} | {d['mrr']:.2f} | "
                      f"{d['latency_p50_ms']:.2f} | {d['latency_p95_ms']:.2f} |", flush=True)
    if "--json" in sys.argv:
        Path(sys.argv[sys.argv.index("--json") + 1]).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
