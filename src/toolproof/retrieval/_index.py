"""`ToolIndex`: search-first tool selection over any number of tools (a Toolset, MCP imports, plain definitions)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol

import numpy as np
import numpy.typing as npt

from ..contract._tool import Tool
from ._entries import ToolEntry, entry_from_definition, entry_from_tool
from ._history import HISTORY_WEIGHT, UsageHistory
from ._hybrid import DEFAULT_FUSION, FUSIONS, Fusion
from ._prerequisites import infer_requires

#: "default" is BM25 fused with the static model (potion-base-8M) when the model files and `tokenizers` are
#: there, else BM25 alone (`ToolIndex.note` says why). "auto" is the best that runs here: "hybrid" (BM25
#: and MiniLM) when the embeddings extra and the MiniLM weights load, else "default".
#: See docs/retrieval.md, "Choosing a retriever".
RetrieverName = Literal["default", "bm25", "static", "embeddings", "hybrid", "auto"]
RETRIEVERS: Final = ("default", "bm25", "static", "embeddings", "hybrid", "auto")
#: The static cosine's weight in the default search, per fusion, each chosen by recall@5 on StableToolBench's
#: queries only and reported held out on three other sets (docs/retrieval.md, `benchmarks/retrieval_fusion.py`).
#: The default's fusion is `DEFAULT_FUSION`, "lift".
STATIC_WEIGHTS: Final[Mapping[str, float]] = MappingProxyType({"lift": 1.5, "gated": 0.5, "linear": 0.5})
#: "hybrid" with fusion="gated" or "linear": the same, with this times MiniLM's cosine (not tuned for MiniLM).
HYBRID_EMBEDDING_WEIGHT: Final = 0.5


class RetrievalDegraded(UserWarning):
    """The default search runs BM25 alone: the static model or `tokenizers` is missing (the message says)."""


class Retriever(Protocol):
    name: str

    def scores(self, query: str) -> npt.NDArray[np.float32]: ...

    def scored(self, query: str) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """The scores, and which entries match the query at all (above the retriever's floor)."""
        ...


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: the entry, its score (higher is better) and why it is here (`"match"` or `"requires"`)."""

    entry: ToolEntry
    score: float
    rank: int
    via: str = "match"

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def tool(self) -> Tool | None:
        return self.entry.tool

    def as_tool_hit(self) -> ToolHit:
        if self.entry.tool is None:
            raise ValueError(f"{self.id!r} is a plain definition, not a Tool")
        return ToolHit(self.entry.tool, self.score, self.rank, self.via)


@dataclass(frozen=True, slots=True)
class ToolHit:
    """A `Toolset.search` result: the `Tool` itself and its score."""

    tool: Tool
    score: float
    rank: int
    via: str = "match"


def top_k(scores: npt.NDArray[np.float32], k: int) -> list[int]:
    """Indices of the k best scores, best first (ties broken by position, so results are stable)."""
    n = len(scores)
    if k <= 0 or n == 0:
        return []
    k = min(k, n)
    part = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    order = sorted(part.tolist(), key=lambda i: (-float(scores[i]), i))
    return order


class ToolIndex:
    """Ranks tools for a message. Build once, search many times; holds no global state.

    - `retriever`: "default" (BM25 fused with the static model; BM25 alone, with `note` saying why, when the
      model or `tokenizers` is missing), "bm25", "static" (the static model alone), "embeddings" (MiniLM
      or another BERT or MPNet sentence-transformers model in `model_dir`: a folder, "all-mpnet-base-v2"
      or a Hugging Face repo id), "hybrid" (BM25 with MiniLM; `[embeddings]` and the weights), or
      "auto": hybrid when it loads, else "default".
      `retriever_name` says what runs.
    - `fusion`: how "default" and "hybrid" combine their retrievers: "lift" (the default: BM25 scaled to a
      best of 1 (b), plus the cosine times its weight (`STATIC_WEIGHTS`, `HYBRID_EMBEDDING_WEIGHT`) times
      1 - b times 1 - BM25's confidence on the query), "gated" (b plus the cosine times its weight times
      1 - the confidence), "linear" (b plus the weighted cosine), "weighted" (per-query confidence of each
      list), "rrf" (reciprocal rank fusion) or "scores" (plain sum).
    - `static_model_dir`: a model2vec folder (default: see `toolproof.retrieval.static.find_static_model`).
    - `group_weight`: share of the tool's group (server) score added to its own; 0 turns it off.
    - `infer_prerequisites` / `expand_requires`: fill `requires` from shared handles, and pull a hit's
      required tools in right after it.
    - `collapse_duplicates`: a definition identical to one already returned (same name, description and
      parameters, e.g. a mirrored server) is skipped: the model gains nothing from seeing it twice.
    - `history`: usage history (past messages and the tools they needed) added with `history_weight`.
    """

    def __init__(
        self,
        entries: Iterable[ToolEntry],
        *,
        retriever: RetrieverName = "default",
        fusion: Fusion = DEFAULT_FUSION,
        expand_requires: bool = True,
        model_dir: str | None = None,
        static_model_dir: str | None = None,
        cache_dir: str | None = None,
        infer_prerequisites: bool = True,
        history: UsageHistory | None = None,
        history_weight: float = HISTORY_WEIGHT,
        group_weight: float = 0.5,
        collapse_duplicates: bool = True,
    ) -> None:
        listed = list(entries)
        if infer_prerequisites:
            listed = infer_requires(listed)
        by_id: dict[str, int] = {}
        for i, entry in enumerate(listed):
            if entry.id in by_id:  # two servers, one name: keep both, the second as `id#2`
                n = 2
                while f"{entry.id}#{n}" in by_id:
                    n += 1
                entry = listed[i] = replace(entry, id=f"{entry.id}#{n}")
            by_id[entry.id] = i
        self._entries = tuple(listed)
        self._by_id = by_id
        self._expand = expand_requires
        self._collapse = collapse_duplicates
        self.history = history
        self.history_weight = history_weight
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}; use one of {', '.join(FUSIONS)}")
        self.fusion: Fusion = fusion
        #: Why this index runs less than was asked for ("default" without the static model), else None.
        self.note: str | None = None
        self._retriever = self._build(retriever, fusion, model_dir, static_model_dir, cache_dir)
        #: What runs: "bm25", "static", "embeddings", "bm25+static" (the default) or "hybrid".
        self.retriever_name: str = self._retriever.name
        self.group_weight = group_weight
        self._groups = _GroupScorer(self._entries) if group_weight > 0 else None

    def _build(
        self, name: str, fusion: Fusion, model_dir: str | None, static_dir: str | None, cache_dir: str | None
    ) -> Retriever:
        retriever, self.note = _make_retriever(self._entries, name, fusion, model_dir, static_dir, cache_dir)
        if self.note is not None:
            warnings.warn(self.note, RetrievalDegraded, stacklevel=3)
        return retriever

    # --- construction -------------------------------------------------------------------------------------

    @classmethod
    def from_tools(
        cls, tools: Iterable[Tool], *, requires: Mapping[str, Sequence[str]] | None = None, **options: Any
    ) -> ToolIndex:
        """From `Tool`s; `requires` maps a tool name to the tools it needs first (pulled in with each hit)."""
        needs = requires or {}
        return cls((entry_from_tool(t, requires=needs.get(t.name, ())) for t in tools), **options)

    @classmethod
    def from_definitions(
        cls,
        definitions: Iterable[Mapping[str, Any]],
        *,
        group: str | None = None,
        requires: Mapping[str, Sequence[str]] | None = None,
        **options: Any,
    ) -> ToolIndex:
        """From MCP `tools/list` items or OpenAI/Anthropic definitions; a repeated id is kept as `id#2`, ...

        `requires` maps a tool id (`group::name`, or the name without a group) to the ids it needs first.
        """
        needs = requires or {}
        entries = []
        for definition in definitions:
            entry = entry_from_definition(definition, group=group)
            entries.append(replace(entry, requires=tuple(needs.get(entry.id, ()))) if entry.id in needs else entry)
        return cls(entries, **options)

    # --- queries ------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> tuple[ToolEntry, ...]:
        return self._entries

    def get(self, tool_id: str) -> ToolEntry:
        return self._entries[self._by_id[tool_id]]

    def scores(self, message: str, *, exclude_history: str | None = None) -> npt.NDArray[np.float32]:
        """A score for every entry, in index order: the retriever's (scaled to a best of 1), plus a share of
        its group's score (a server whose tools together match the message lifts each of them), plus usage
        history when there is one."""
        return self._scored(message, exclude_history)[0]

    def matches(self, message: str, *, exclude_history: str | None = None) -> npt.NDArray[np.bool_]:
        """Which entries share anything with `message`: above the retriever's floor, or voted for by usage
        history. `search` returns no other entry (except the tools a returned one requires)."""
        return self._scored(message, exclude_history)[1]

    def _scored(
        self, message: str, exclude_history: str | None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        own, matched = self._retriever.scored(message)
        scores = _unit(own)
        if self._groups is not None and self._groups.active:
            scores = scores + np.float32(self.group_weight) * self._groups.scores(message, scores)
        if self.history is None or not len(self.history):
            return scores, matched
        votes = self.history.scores(message, self._by_id, len(self._entries), exclude=exclude_history)
        fused: npt.NDArray[np.float32] = _unit(scores) + np.float32(self.history_weight) * votes
        return fused, matched | (votes > 0)

    def search(self, message: str, k: int = 5, *, exclude_history: str | None = None) -> list[Hit]:
        """Up to k tools needed for `message`, best first, each followed by the tools it requires.

        Only tools that match the message are returned (above the retriever's floor: for BM25, sharing a
        term), so a message that matches nothing, or an empty one, gets an empty list, never k unrelated tools.
        `exclude_history` leaves out the usage record with that key (held-out evaluation).
        """
        if not isinstance(message, str):
            raise TypeError(f"search needs the message as a str, got {type(message).__name__}")
        if k <= 0 or not self._entries or not message.strip():
            return []
        scores, matched = self._scored(message, exclude_history)
        eligible = np.where(matched, scores, np.float32(-np.inf))
        ranked = [i for i in top_k(eligible, 4 * k + 10 if self._collapse else k) if matched[i]]
        hits: list[Hit] = []
        taken: set[int] = set()
        shown: set[tuple[str, str, tuple[tuple[str, str], ...]]] = set()

        def take(i: int, via: str) -> None:
            entry = self._entries[i]
            taken.add(i)
            if self._collapse:
                key = (entry.name, entry.description, entry.parameters)
                if key in shown:
                    return
                shown.add(key)
            hits.append(Hit(entry, float(scores[i]), len(hits) + 1, via))

        for i in ranked:
            if len(hits) >= k:
                break
            if i in taken:
                continue
            take(i, "match")
            if self._expand:
                for req in self._entries[i].requires:
                    j = self._by_id.get(req)
                    if j is not None and j not in taken and len(hits) < k:
                        take(j, "requires")
        return hits

    def search_ids(self, message: str, k: int = 5, *, exclude_history: str | None = None) -> list[str]:
        return [h.id for h in self.search(message, k, exclude_history=exclude_history)]


def _unit(scores: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    top = float(scores.max()) if len(scores) else 0.0
    return scores / np.float32(top) if top > 0 else scores


class _GroupScorer:
    """BM25 over one document per group (its name and all its tools' names and descriptions)."""

    def __init__(self, entries: Sequence[ToolEntry]) -> None:
        from ._bm25 import BM25Retriever

        names: dict[str, int] = {}
        rows = [names.setdefault(e.group, len(names)) if e.group else -1 for e in entries]
        self.active = len(names) > 1
        self._rows = np.array(rows, dtype=np.int64)
        texts: list[list[str]] = [[g] for g in names]
        for e, row in zip(entries, rows, strict=True):
            if row >= 0:
                texts[row].append(f"{e.name} {e.description}")
        self._bm25 = BM25Retriever([ToolEntry(id=g, name="", description=" ".join(t)) for g, t in
                                    zip(names, texts, strict=True)]) if self.active else None

    def scores(self, message: str, own: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Each tool's group score; a tool without a group is its own group (its own score), so grouped and
        ungrouped tools compete on the same scale."""
        if self._bm25 is None:
            return own
        per_group = _unit(self._bm25.scores(message))
        padded = np.append(per_group, np.float32(0.0))
        out: npt.NDArray[np.float32] = np.where(self._rows >= 0, padded[self._rows], own)
        return out


def _static_or_note(entries: Sequence[ToolEntry], static_dir: str | None) -> tuple[Retriever | None, str | None]:
    """The static retriever, or None and why not (no `tokenizers`, no model files): the default degrades."""
    try:
        from .static import StaticRetriever

        return StaticRetriever(entries, model_dir=static_dir), None
    except ImportError as exc:
        reason = str(exc) if "static" in str(exc) else (
            f"{exc}: the default search's static embeddings need `pip install 'toolproof[retrieval]'`")
        return None, f"BM25 only: {reason}"


def _make_retriever(
    entries: Sequence[ToolEntry], name: str, fusion: Fusion, model_dir: str | None, static_dir: str | None,
    cache_dir: str | None,
) -> tuple[Retriever, str | None]:
    """The retriever for `name` and a note when the default had to run BM25 alone."""
    if name not in RETRIEVERS:
        raise ValueError(f"unknown retriever {name!r}; use one of {', '.join(RETRIEVERS)}")
    from ._bm25 import BM25Retriever
    from ._hybrid import HybridRetriever

    if name == "bm25":
        return BM25Retriever(entries), None
    if name == "default":
        static, note = _static_or_note(entries, static_dir)
        if static is None:
            return BM25Retriever(entries), note
        weights = (1.0, STATIC_WEIGHTS.get(fusion, 1.0))
        return HybridRetriever(BM25Retriever(entries), static, fusion=fusion, weights=weights,
                               name="bm25+static"), None
    if name == "static":
        from .static import StaticRetriever

        return StaticRetriever(entries, model_dir=static_dir), None
    if name == "auto":
        try:
            return _make_retriever(entries, "hybrid", fusion, model_dir, static_dir, cache_dir)
        except ImportError:  # no embeddings extra or no weights; a broken model folder still raises
            return _make_retriever(entries, "default", fusion, model_dir, static_dir, cache_dir)
    from ._embeddings import EmbeddingRetriever

    semantic = EmbeddingRetriever(entries, model_dir=model_dir, cache_dir=cache_dir)
    if name == "embeddings":
        return semantic, None
    return HybridRetriever(BM25Retriever(entries), semantic, fusion=fusion,
                           weights=(1.0, HYBRID_EMBEDDING_WEIGHT)), None
