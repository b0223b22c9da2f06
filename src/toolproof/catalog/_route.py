"""Route-first: pick the groups a message is about, then show the agent only those groups' tools.

A group is described by its name, an optional description and its tools' names and descriptions; the router
ranks groups with the same BM25 as tool search, and keyword rules (exact words or phrases) take precedence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..contract._tool import Tool
from ..retrieval._bm25 import BM25Retriever
from ..retrieval._entries import ToolEntry
from ..retrieval._index import top_k
from ..retrieval._text import Tokenizer
from ._toolset import Toolset

UNGROUPED = "default"


@dataclass(frozen=True, slots=True)
class Route:
    group: str
    score: float
    via: str  # "keyword" or "search"


class Router:
    """Groups for a message: keyword rules first, then BM25 over group descriptions."""

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        descriptions: Mapping[str, str] | None = None,
        keywords: Mapping[str, Sequence[str]] | None = None,
        always: Sequence[str] = (),
    ) -> None:
        self._tools = tuple(tools)
        members: dict[str, list[Tool]] = {}
        for t in self._tools:
            members.setdefault(t.group or UNGROUPED, []).append(t)
        self.groups: tuple[str, ...] = tuple(members)
        descriptions = dict(descriptions or {})
        unknown = [g for g in [*descriptions, *(keywords or {}), *always] if g not in members]
        if unknown:
            raise ValueError(f"router names groups no tool has: {', '.join(sorted(set(unknown)))}")
        docs = [
            ToolEntry(
                id=group,
                name=group,
                description=" ".join([descriptions.get(group, ""), *(f"{t.name} {t.description}" for t in tools)]),
            )
            for group, tools in members.items()
        ]
        self._bm25 = BM25Retriever(docs)
        self._tokenize = Tokenizer()
        self._keywords = {g: [self._tokenize(w) for w in words] for g, words in (keywords or {}).items()}
        self._always = tuple(always)

    def route(self, message: str, n: int = 1) -> list[Route]:
        """Up to `n` groups (plus keyword matches and `always` groups), best first."""
        words = self._tokenize(message)
        chosen: list[Route] = []
        for group, phrases in self._keywords.items():
            if any(p and _contains(words, p) for p in phrases):
                chosen.append(Route(group, float("inf"), "keyword"))
        scores = self._bm25.scores(message)
        for i in top_k(scores, n):
            if scores[i] > 0 and all(r.group != self.groups[i] for r in chosen):
                chosen.append(Route(self.groups[i], float(scores[i]), "search"))
        for group in self._always:
            if all(r.group != group for r in chosen):
                chosen.append(Route(group, 0.0, "always"))
        return chosen

    def toolset_for(self, message: str, n: int = 1) -> Toolset:
        """Only the tools of the routed groups, in their original order (empty when nothing matched)."""
        picked = {r.group for r in self.route(message, n)}
        return Toolset(t for t in self._tools if (t.group or UNGROUPED) in picked)


def _contains(words: list[str], phrase: list[str]) -> bool:
    size = len(phrase)
    return any(words[i : i + size] == phrase for i in range(len(words) - size + 1))
