"""Usage history: tools that were called for similar past requests (the audit trail as a retrieval signal).

An agent's past turns say which tools a kind of request really needed, including the steps the request never
names ("save it to /root/x.md" -> `write_file`; any calendar change -> `GetUserToken`). For a new message the
most similar past messages vote, weighted by BM25 similarity, for the tools they called.
`UsageHistory.from_audit` reads those pairs out of an audit trail: a `search_tools` query and the tools the model
then called with success.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from ._bm25 import BM25Retriever
from ._entries import ToolEntry

Array = npt.NDArray[np.float32]

#: What `ToolIndex` adds of the history's votes (scaled to 1) to the retriever's scores (scaled to 1): chosen on
#: StableToolBench's held-out halves only (`benchmarks/retrieval_history.py`); 0.5 cost it 14% of its recall@5.
HISTORY_WEIGHT: Final = 0.1
#: A search query kept in a usage record, at most (characters): the search tool takes 2,000.
MAX_QUERY: Final = 4_000
#: The outcomes of an audit record whose call reached the tool and succeeded (a replay is a success seen again).
_SUCCEEDED: Final = frozenset(("ok", "replayed"))


class AuditedCall(Protocol):
    """What `from_audit` reads of an audit record (`toolproof.stores.AuditRecord` has it all)."""

    @property
    def at(self) -> float: ...
    @property
    def tool(self) -> str: ...
    @property
    def arguments(self) -> Any: ...
    @property
    def outcome(self) -> str: ...
    @property
    def run_id(self) -> str | None: ...
    @property
    def conversation_id(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Usage:
    """One past request and the tool ids called to serve it; `key` lets an evaluation hold a record out."""

    message: str
    tool_ids: tuple[str, ...]
    key: str = ""


class UsageHistory:
    """Past (message, tools called) pairs, searchable by message similarity."""

    def __init__(self, records: Iterable[Usage], *, neighbours: int = 10) -> None:
        self.records = tuple(records)
        self._neighbours = neighbours
        self._bm25 = BM25Retriever([ToolEntry(id=str(i), name="", description=r.message)
                                    for i, r in enumerate(self.records)])

    @classmethod
    def from_audit(cls, records: Iterable[AuditedCall], *, search_tool: str = "search_tools",
                   neighbours: int = 10) -> UsageHistory:
        """Usage read from an audit trail: each successful `search_tool` call opens a usage (its `query`, cut to
        `MAX_QUERY` characters), and the tools called with success after it in the same conversation (else
        the same run), until the next search, are the tools it needed.

        Records may come oldest or newest first (as a store lists them) and are taken in time order within a
        conversation; a record with neither a conversation nor a run id, a failed call (invalid, error, not
        dispatched) and a search nothing followed add nothing. The tool ids are the names the model called, as
        `ToolIndex.from_tools` names its entries. Keys are `<conversation>#<n>`, the n-th search of that
        conversation."""
        listed = list(records)
        # Equal times keep the listing's order, read the way it runs: a store lists the newest first.
        step = -1 if len(listed) > 1 and listed[0].at > listed[-1].at else 1
        threads: dict[str, list[AuditedCall]] = {}
        for i in sorted(range(len(listed)), key=lambda i: (listed[i].at, step * i)):
            thread = listed[i].conversation_id or listed[i].run_id
            if thread:
                threads.setdefault(thread, []).append(listed[i])
        usages = [u for thread, calls in threads.items() for u in _usages(thread, calls, search_tool)]
        return cls(usages, neighbours=neighbours)

    def __len__(self) -> int:
        return len(self.records)

    def votes(self, message: str, *, exclude: str | None = None) -> dict[str, float]:
        """Tool id -> summed similarity (each neighbour scaled by the best neighbour's) of past uses."""
        if not self.records:
            return {}
        sims = self._bm25.scores(message)
        if exclude is not None:
            for i, record in enumerate(self.records):
                if record.key == exclude:
                    sims[i] = 0.0
        order = np.argsort(-sims, kind="stable")[: self._neighbours]
        best = float(sims[order[0]]) if len(order) else 0.0
        if best <= 0:
            return {}
        out: dict[str, float] = {}
        for i in order:
            weight = float(sims[i]) / best
            if weight <= 0:
                break
            for tool_id in set(self.records[i].tool_ids):
                out[tool_id] = out.get(tool_id, 0.0) + weight
        return out

    def scores(self, message: str, positions: Mapping[str, int], size: int, *, exclude: str | None = None) -> Array:
        """Votes as an array aligned with an index (`positions`: tool id -> row), scaled to a maximum of 1."""
        out = np.zeros(size, dtype=np.float32)
        for tool_id, vote in self.votes(message, exclude=exclude).items():
            row = positions.get(tool_id)
            if row is not None:
                out[row] = vote
        top = float(out.max()) if size else 0.0
        return out / top if top > 0 else out


def _usages(thread: str, calls: Iterable[AuditedCall], search_tool: str) -> Iterable[Usage]:
    """One conversation's calls, in time order, as usages: a search and the tools that succeeded after it."""
    query: str | None = None
    tools: dict[str, None] = {}  # called after this search, in order, once each
    searches = 0
    for record in calls:
        if record.outcome not in _SUCCEEDED or not isinstance(record.tool, str):
            continue
        if record.tool != search_tool:
            if query is not None:
                tools.setdefault(record.tool)
            continue
        if query is not None and tools:
            yield Usage(query, tuple(tools), key=f"{thread}#{searches}")
        text = record.arguments.get("query") if isinstance(record.arguments, Mapping) else None
        query, tools = (text[:MAX_QUERY] if isinstance(text, str) and text.strip() else None), {}
        searches += query is not None
    if query is not None and tools:
        yield Usage(query, tuple(tools), key=f"{thread}#{searches}")
