"""The recall table of docs/retrieval.md: every corpus x pool size x retriever, through `evaluate_files`
(the same code as `toolproof eval retrieval`). Slow (minutes; embeddings encode ~7,500 tool texts once).

    PYTHONPATH=src:. python benchmarks/retrieval_table.py [--cache-dir DIR] [--fast] [--json FILE]
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from tests._data import CORPORA
from toolproof.retrieval._evaluate import evaluate_files

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
    ("default (BM25 + static)", "default", {}),
    ("MiniLM", "embeddings", {}),
    ("hybrid", "hybrid", {}),
    ("BM25 + history", "bm25", {"history": True}),
]


FAST = ("BM25", "default (BM25 + static)")  # --fast: the default against BM25 alone, no MiniLM rows


def _bfcl_files(folder: Path) -> tuple[Path, Path]:
    """The BFCL single-tool set (benchmarks.retrieval_sets) written as corpus and query files."""
    from benchmarks.retrieval_sets import bfcl_single_tool

    entries, queries = bfcl_single_tool()
    corpus, gold = folder / "bfcl_single_corpus.jsonl", folder / "bfcl_single_queries.jsonl"
    corpus.write_text("".join(json.dumps({"tool_id": e.id, "name": e.name, "description": e.description,
                                          "inputSchema": {"type": "object", "properties": {
                                              n: {"description": d} for n, d in e.parameters}}}) + "\n"
                              for e in entries))
    gold.write_text("".join(json.dumps({"qid": q.qid, "query": q.text, "gold_tool_ids": [list(s) for s in q.steps]})
                            + "\n" for q in queries))
    return corpus, gold


def main() -> None:
    import tempfile

    cache = sys.argv[sys.argv.index("--cache-dir") + 1] if "--cache-dir" in sys.argv else None
    configs = [c for c in CONFIGS if c[0] in FAST] if "--fast" in sys.argv else CONFIGS
    SETS["BFCL single-tool"] = _bfcl_files(Path(tempfile.mkdtemp(prefix="toolproof-bfcl-")))
    rows: list[dict[str, Any]] = []
    print(f"date {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}", flush=True)
    print("| corpus (pool) | retriever | all@5 | any@5 | recall@5 | all@10 | any@10 | MRR | p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, (corpus, queries) in SETS.items():
        for pool in (0, 1_000, 10_000):
            if pool and pool <= sum(1 for line in corpus.open(encoding="utf-8") if line.strip()):
                continue  # a pool no larger than the corpus is the corpus itself
            for label, retriever, options in configs:
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
