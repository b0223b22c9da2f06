"""Ranking tools for a message: BM25 (+ optional MiniLM embeddings), usage history, prerequisites.

What a model is shown (per-turn selection, the `search_tools` meta-tool, routing) lives in `toolproof.catalog`.

Needs the `toolproof[retrieval]` extra (bm25s, PyStemmer); embeddings need `toolproof[embeddings]` and the
model weights (see `embeddings.default_model_dir`).
"""

from __future__ import annotations

from .._surface import publish_all
from ._entries import ToolEntry, entry_from_definition, entry_from_tool
from ._history import Usage, UsageHistory
from ._index import Hit, RetrieverName, ToolHit, ToolIndex
from ._prerequisites import infer_requires

__all__ = [
    "Hit",
    "RetrieverName",
    "ToolEntry",
    "ToolHit",
    "ToolIndex",
    "Usage",
    "UsageHistory",
    "entry_from_definition",
    "entry_from_tool",
    "infer_requires",
]

publish_all(globals())
