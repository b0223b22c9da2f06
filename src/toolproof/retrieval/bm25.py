"""BM25 over tool entries (`bm25s` does the scoring; the tokenizer here knows identifiers, stems and CJK)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .entries import ToolEntry
from .text import Tokenizer

Scores = npt.NDArray[np.float32]


class BM25Retriever:
    """Scores every entry for a query with BM25 (Lucene variant, k1=1.2, b=0.75)."""

    name = "bm25"

    def __init__(
        self, entries: Sequence[ToolEntry], *, tokenizer: Tokenizer | None = None, k1: float = 1.2, b: float = 0.75
    ) -> None:
        import bm25s

        self._tokenize = tokenizer or Tokenizer()
        self._vocab: dict[str, int] = {}
        ids: list[list[int]] = []
        for entry in entries:
            ids.append([self._vocab.setdefault(tok, len(self._vocab)) for tok in self._tokenize(entry.text())])
        self._size = len(entries)
        self._model: Any = None
        if self._size:
            model = bm25s.BM25(k1=k1, b=b, method="lucene")
            model.index((ids, dict(self._vocab)), show_progress=False)
            self._model = model

    def __len__(self) -> int:
        return self._size

    def query_ids(self, query: str) -> list[int]:
        return [self._vocab[t] for t in self._tokenize(query) if t in self._vocab]

    def scores(self, query: str) -> Scores:
        """One score per entry (0 for entries sharing no term with the query)."""
        ids = self.query_ids(query)
        if not ids or self._model is None:
            return np.zeros(self._size, dtype=np.float32)
        return np.asarray(self._model.get_scores_from_ids(ids), dtype=np.float32)
