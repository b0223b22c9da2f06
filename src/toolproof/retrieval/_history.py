"""Usage history: tools that were called for similar past requests (the audit trail as a retrieval signal).

An agent's past turns say which tools a kind of request really needed, including the steps the request never
names ("save it to /root/x.md" -> `write_file`; any calendar change -> `GetUserToken`). For a new message the
most similar past messages vote, weighted by BM25 similarity, for the tools they called.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._bm25 import BM25Retriever
from ._entries import ToolEntry

Array = npt.NDArray[np.float32]


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
