"""Search-first and route-first tool selection: BM25 (+ optional MiniLM embeddings), prerequisites, routing.

Needs the `toolproof[retrieval]` extra (bm25s, PyStemmer); embeddings need `toolproof[embeddings]` and the
model weights (see `embeddings.default_model_dir`).
"""

from __future__ import annotations

from .agent import definition_of, search_tools_tool, tools_for_turn
from .entries import ToolEntry, entry_from_definition, entry_from_tool
from .history import Usage, UsageHistory
from .index import Hit, RetrieverName, ToolHit, ToolIndex
from .prerequisites import infer_requires
from .route import Route, Router

__all__ = [
    "Hit",
    "RetrieverName",
    "Route",
    "Router",
    "ToolEntry",
    "ToolHit",
    "ToolIndex",
    "Usage",
    "UsageHistory",
    "definition_of",
    "entry_from_definition",
    "entry_from_tool",
    "infer_requires",
    "search_tools_tool",
    "tools_for_turn",
]
