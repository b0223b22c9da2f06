"""Fusing BM25 and embeddings: the cosine lifts what BM25 barely sees, as far as BM25 is unsure.

The default, `lift`: BM25 scaled to a best of 1 (b), plus each cosine times its weight, times (1 - b), times
(1 - BM25's confidence). A tool BM25 scores near its best keeps BM25's place, so a cosine cannot reshuffle
near-identical siblings that BM25 put on top (`AddReminder`, `DeleteReminder`, ...); a tool BM25 barely
matches can climb by meaning. When BM25's best hit stands far above the rest the request named its tool's
words and the cosine's weight shrinks; when BM25 sees nothing the cosine decides. `gated` is the same without
the (1 - b). Chosen on one public set and judged on the others (docs/retrieval.md).

Plain RRF (Cormack et al., 2009) adds 1/(60 + rank) from each list; it treats a retriever that found nothing
(BM25 on a paraphrase, or on Chinese text against an English query) like one that is sure, and throws away
how far ahead the best hit is. `weighted` maps each retriever's scores so its best is 1 and its 100th best
is 0, then weights each list by how far its best stands out from the rest of its own top list. Both lose to
BM25 alone on held-out sets (`benchmarks/retrieval_fusion.py`); they stay as choices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, Protocol

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]
Fusion = Literal["lift", "gated", "weighted", "rrf", "scores", "linear"]
FUSIONS: Final = ("lift", "gated", "weighted", "rrf", "scores", "linear")
#: The fusion of the default search, and of `retriever="hybrid"` unless told otherwise: chosen on one public set
#: and judged on the others (docs/retrieval.md, "Fusion, chosen on one set and judged on the others").
DEFAULT_FUSION: Final[Fusion] = "lift"


class _Scorer(Protocol):
    name: str

    def scores(self, query: str) -> Array: ...

    def scored(self, query: str) -> tuple[Array, npt.NDArray[np.bool_]]: ...


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


def linear(score_lists: Sequence[Array], weights: Sequence[float], *, scale_first: bool = True) -> Array:
    """BM25 (the first list) scaled to a best of 1, plus each embedding's raw cosine times its weight.

    Cosines already share one scale, so they are added as they are; only BM25's unbounded scores are
    rescaled (`scale_first=False`: lists already on one scale). The first weight applies to BM25 (1 in the
    default search). Measured against rescaling every
    list first (`minmax_top`), confidence weights and RRF in `benchmarks/retrieval_fusion.py`.
    """
    n = len(score_lists[0]) if score_lists else 0
    fused = np.zeros(n, dtype=np.float32)
    for at, (scores, weight) in enumerate(zip(score_lists, weights, strict=True)):
        if not weight or not n:
            continue
        if at == 0 and scale_first:
            top = float(scores.max())
            fused += np.float32(weight / top) * scores if top > 0 else np.float32(0.0)
        else:
            fused += np.float32(weight) * scores
    return fused


def gated(score_lists: Sequence[Array], weights: Sequence[float]) -> Array:
    """`linear`, with every embedding's weight scaled by (1 - BM25's `confidence` on this query).

    BM25 (the first list) keeps its weight; a query BM25 is sure about is ranked almost as BM25 ranks it, and
    one it barely matches (a paraphrase) gets the embeddings at full weight.
    """
    if not score_lists:
        return np.zeros(0, dtype=np.float32)
    trust = confidence(score_lists[0])
    return linear(score_lists, [weights[0], *(w * (1.0 - trust) for w in weights[1:])])


def lift(score_lists: Sequence[Array], masks: Sequence[Mask], weights: Sequence[float]) -> Array:
    """BM25 scaled to a best of 1 (b), plus each cosine times its weight, times (1 - b), times (1 - BM25's
    confidence over the tools it matches).

    The (1 - b) lets a cosine lift what BM25 barely sees while BM25's strong hits keep BM25's order among
    near-identical siblings; the confidence, as in `gated`, takes the cosine's weight back on a query whose
    best BM25 hit stands out. Tools that share only a number with the query ("12", "20th") do not count in
    that confidence: a number alone is not a match (the search floor).
    """
    if not score_lists:
        return np.zeros(0, dtype=np.float32)
    lexical = score_lists[0]
    top = float(lexical.max()) if len(lexical) else 0.0
    b = lexical * np.float32(weights[0] / top) if top > 0 else np.zeros_like(lexical)
    trust = confidence(np.where(masks[0], lexical, np.float32(0.0)))
    fused = b.astype(np.float32)
    for scores, weight in zip(score_lists[1:], weights[1:], strict=True):
        fused += np.float32(weight * (1.0 - trust)) * scores * (np.float32(1.0) - b)
    return fused


def weighted(score_lists: Sequence[Array]) -> Array:
    """Each rescaled list weighted 1/n plus its share of the lists' confidences (`confidence`)."""
    units = [minmax_top(s) for s in score_lists]
    sure = [confidence(u) for u in units]
    total = sum(sure) or 1.0
    fused = np.zeros(len(units[0]) if units else 0, dtype=np.float32)
    for unit, c in zip(units, sure, strict=True):
        fused += np.float32(1 / len(units) + c / total) * unit
    return fused


class HybridRetriever:
    """Two or more retrievers (BM25 first) fused per query by `fusion`.

    `weights` (for "lift", "gated" and "linear"): BM25's, then each embedding's (see `linear`); by default all 1.
    """

    def __init__(
        self, lexical: _Scorer, *semantic: _Scorer, fusion: Fusion = "weighted",
        weights: Sequence[float] | None = None, name: str = "hybrid",
    ) -> None:
        if not semantic:
            raise ValueError("a hybrid retriever needs at least two retrievers")
        self.parts: tuple[_Scorer, ...] = (lexical, *semantic)
        if weights is not None and len(weights) != len(self.parts):
            raise ValueError(f"{len(self.parts)} retrievers need {len(self.parts)} weights, got {len(weights)}")
        self.fusion = fusion
        self.weights = tuple(weights) if weights is not None else (1.0,) * len(self.parts)
        self.name = name

    @property
    def lexical(self) -> _Scorer:
        return self.parts[0]

    def scores(self, query: str) -> Array:
        return self.scored(query)[0]

    def scored(self, query: str) -> tuple[Array, Mask]:
        """The fused scores; an entry matches when any retriever matches it (above that retriever's floor)."""
        scored = [p.scored(query) for p in self.parts]
        masks = [m for _, m in scored]
        return self.fuse([s for s, _ in scored], masks), np.logical_or.reduce(masks)

    def fuse(self, lists: Sequence[Array], masks: Sequence[Mask]) -> Array:
        """One fused score per entry from the parts' scores and match masks (in `parts` order)."""
        if self.fusion == "lift":
            return lift(lists, masks, self.weights)
        if self.fusion == "rrf":
            return rrf(lists, [1.0] * len(lists))
        if self.fusion == "scores":
            return linear([minmax_top(x) for x in lists], [1.0] * len(lists), scale_first=False)
        if self.fusion == "linear":
            return linear(lists, self.weights)
        if self.fusion == "gated":
            return gated(lists, self.weights)
        return weighted(lists)
