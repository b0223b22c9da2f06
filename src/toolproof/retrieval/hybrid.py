"""Fusing BM25 and embeddings, weighted per query by each retriever's confidence (or plain RRF).

Plain RRF (Cormack et al., 2009) adds 1/(60 + rank) from each list; it treats a retriever that found nothing
(BM25 on a paraphrase, or on Chinese text against an English query) like one that is sure, and throws away
how far ahead the best hit is. The default fusion maps each retriever's scores so its best is 1 and its
100th best is 0, then weights each list by how far its best stands out from the rest of its own top list, so
the retriever that "sees" the answer dominates that query. Measured on the three benchmarks it beats RRF on
LiveMCPBench and ties elsewhere (docs/retrieval.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, Protocol

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]
Fusion = Literal["weighted", "rrf", "scores"]
FUSIONS: Final = ("weighted", "rrf", "scores")


class _Scorer(Protocol):
    name: str
    floor: float

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


def minmax_top(scores: Array, depth: int = 100) -> Array:
    """Scores mapped so the best is 1 and the `depth`-th best is 0 (below it: 0), comparable across retrievers."""
    if not len(scores):
        return scores
    depth = min(depth, len(scores))
    floor = float(np.partition(scores, len(scores) - depth)[len(scores) - depth])
    best = float(scores.max())
    if best <= floor:
        return np.zeros_like(scores)
    out: Array = np.clip((scores - floor) / (best - floor), 0.0, 1.0).astype(np.float32)
    return out


class HybridRetriever:
    """BM25 and embeddings fused per query."""

    name = "hybrid"

    def __init__(self, lexical: _Scorer, semantic: _Scorer, *, fusion: Fusion = "weighted") -> None:
        self.lexical = lexical
        self.semantic = semantic
        self.fusion = fusion

    def scores(self, query: str) -> Array:
        return self._fuse(self.lexical.scores(query), self.semantic.scores(query))

    def scored(self, query: str) -> tuple[Array, npt.NDArray[np.bool_]]:
        """The fused scores; an entry matches when either retriever puts it above that retriever's floor."""
        lex, sem = self.lexical.scores(query), self.semantic.scores(query)
        return self._fuse(lex, sem), (lex > self.lexical.floor) | (sem > self.semantic.floor)

    def _fuse(self, lex: Array, sem: Array) -> Array:
        if self.fusion == "rrf":
            return rrf([lex, sem], [1.0, 1.0])
        if self.fusion == "scores":
            return minmax_top(lex) + minmax_top(sem)
        lex_u, sem_u = minmax_top(lex), minmax_top(sem)
        weights = [confidence(lex_u), confidence(sem_u)]
        total = sum(weights) or 1.0
        return np.float32(0.5 + weights[0] / total) * lex_u + np.float32(0.5 + weights[1] / total) * sem_u
