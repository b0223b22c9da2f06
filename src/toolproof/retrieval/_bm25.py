"""BM25 over tool entries (`bm25s` does the scoring; the tokenizer here knows identifiers, stems and CJK)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._entries import ToolEntry
from ._text import Tokenizer

Scores = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]


class BM25Retriever:
    """Scores every entry for a query with BM25 (Lucene variant, k1=1.2, b=0.75)."""

    name = "bm25"
    #: BM25 is 0 exactly when an entry shares no term with the query: only scores above it are matches.
    floor = 0.0

    def __init__(
        self, entries: Sequence[ToolEntry], *, tokenizer: Tokenizer | None = None, k1: float = 1.2, b: float = 0.75
    ) -> None:
        import bm25s

        self._tokenize = tokenizer or Tokenizer()
        self._vocab: dict[str, int] = {}
        ids: list[list[int]] = []
        for entry in entries:
            ids.append([self._vocab.setdefault(tok, len(self._vocab)) for tok in self._tokenize(entry.text())])
        self._numeric = [tok.isdigit() for tok in self._vocab]  # by vocabulary id (dicts keep insertion order)
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
        return self._score_ids(self.query_ids(query))

    def _score_ids(self, ids: list[int]) -> Scores:
        if not ids or self._model is None:
            return np.zeros(self._size, dtype=np.float32)
        return np.asarray(self._model.get_scores_from_ids(ids), dtype=np.float32)

    def scored(self, query: str) -> tuple[Scores, Mask]:
        """The scores and which entries match at all: share a word with the query. A number alone is a
        value, not a task ("100 dollars" does not make a tool that mentions "100 kg" a match)."""
        ids = self.query_ids(query)
        scores = self._score_ids(ids)
        words = [i for i in ids if not self._numeric[i]]
        if len(words) == len(ids):
            return scores, scores > self.floor
        return scores, self._score_ids(words) > self.floor
