"""Fusing BM25 and embeddings: reciprocal rank fusion, optionally weighted by each retriever's confidence.

Plain RRF (Cormack et al., 2009) adds 1/(60 + rank) from each list. It treats a retriever that found nothing
(BM25 on a paraphrase, or on Chinese text against an English query) like one that is sure; the weighted form
scales each list by how far its best score stands out from the rest of its own top list, so the retriever
that "sees" the answer dominates that query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]
Fusion = Literal["rrf", "weighted"]


class _Scorer(Protocol):
    name: str

    def scores(self, query: str) -> Array: ...


def confidence(scores: Array, depth: int = 20) -> float:
    """How much the top score stands out: (top1 - mean of top `depth`) / (top1 + eps), 0 when nothing matched."""
    if not len(scores):
        return 0.0
    depth = min(depth, len(scores))
    top = np.partition(scores, len(scores) - depth)[len(scores) - depth :]
    best = float(top.max())
    if best <= 0:
        return 0.0
    return max(0.0, (best - float(top.mean())) / (abs(best) + 1e-9))


def rrf(score_lists: Sequence[Array], weights: Sequence[float], *, depth: int = 100, k: int = 60) -> Array:
    """Weighted reciprocal rank fusion over the top `depth` of each list."""
    n = len(score_lists[0]) if score_lists else 0
    fused = np.zeros(n, dtype=np.float32)
    for scores, weight in zip(score_lists, weights, strict=True):
        if weight <= 0 or not n:
            continue
        d = min(depth, n)
        top = np.argpartition(-scores, d - 1)[:d]
        top = top[np.argsort(-scores[top], kind="stable")]
        top = top[scores[top] > 0] if scores.dtype.kind == "f" and (scores[top] > 0).any() else top
        fused[top] += np.float32(weight) / (k + np.arange(1, len(top) + 1, dtype=np.float32))
    return fused


class HybridRetriever:
    """BM25 and embeddings fused per query."""

    name = "hybrid"

    def __init__(self, lexical: _Scorer, semantic: _Scorer, *, fusion: Fusion = "weighted") -> None:
        self.lexical = lexical
        self.semantic = semantic
        self.fusion = fusion

    def scores(self, query: str) -> Array:
        lex = self.lexical.scores(query)
        sem = self.semantic.scores(query)
        if self.fusion == "rrf":
            return rrf([lex, sem], [1.0, 1.0])
        weights = [0.5 + confidence(lex), 0.5 + confidence(sem)]
        return rrf([lex, sem], weights)
