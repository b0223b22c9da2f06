"""Benchmark loading, distractor pools, the metrics and `toolproof eval retrieval` on the real public corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolproof.cli import app
from toolproof.retrieval._corpora import GoldQuery, base_id, build_pool, load_distractors, load_entries, load_queries
from toolproof.retrieval._evaluate import evaluate_files, judge, summarize

RUNNER = CliRunner()


def test_the_three_benchmarks_load(corpora: Path) -> None:
    r = corpora / "retrieval"
    live = load_entries(r / "livemcpbench_corpus.jsonl")
    assert len(live) == 527 and live[0].group == "Bing_CN_MCP" and live[0].id == "Bing_CN_MCP::bing_search"
    assert len(load_queries(r / "livemcpbench_queries.jsonl")) == 94  # one of 95 tasks has no resolvable tool
    stb = load_entries(r / "stabletoolbench_corpus.jsonl")
    assert len(stb) == 2479 and len(load_queries(r / "stabletoolbench_queries.jsonl")) == 765
    bank = load_entries(r / "apibank_corpus.jsonl")
    ids = [e.id for e in bank]
    assert len(bank) == 75 and len(set(ids)) == 75 and "AddMeeting#2" in ids and base_id("AddMeeting#2") == "AddMeeting"
    queries = load_queries(r / "apibank_lv2_queries.jsonl")
    assert len(queries) == 49 and sum(("GetUserToken",) in q.steps for q in queries) == 26


def test_pools_are_exact_deterministic_and_keep_every_corpus_tool(corpora: Path) -> None:
    entries = load_entries(corpora / "retrieval" / "apibank_corpus.jsonl")
    distractors = load_distractors([corpora / "mcp_tools"])
    assert len({(d.name, d.description, d.parameters) for d in distractors}) == len(distractors)
    pool = build_pool(entries, distractors, 1000, seed=3)
    assert len(pool) == 1000 and len({e.id for e in pool}) == 1000
    assert {e.id for e in entries} <= {e.id for e in pool}
    assert [e.id for e in build_pool(entries, distractors, 1000, seed=3)] == [e.id for e in pool]
    big = build_pool(entries, distractors, len(distractors) + 500)
    assert len(big) == len(distractors) + 500 and any(e.id.startswith("mirror2/") for e in big)
    assert build_pool(entries, distractors, 10) == entries


def test_metrics_on_a_hand_checked_case() -> None:
    two_steps = GoldQuery("q1", "x", (("a",), ("b", "b2")))
    one_step = GoldQuery("q2", "y", (("c",),))
    results = [judge(two_steps, ["z", "b2", "a", "q"], 1.0), judge(one_step, ["z", "y", "x", "w", "v", "c"], 3.0)]
    assert results[0].steps_found_at == (3, 2)
    report = summarize(results)
    assert report.all_at[1] == 0 and report.all_at[3] == 0.5 and report.any_at[3] == 0.5 and report.all_at[10] == 1
    assert report.recall[1] == 0 and report.recall[3] == 0.5 and report.recall[5] == 0.5
    assert report.mrr == pytest.approx((1 / 2 + 1 / 6) / 2)
    assert report.latency_p50_ms == 2.0


def test_cli_reports_the_same_numbers_as_the_library(corpora: Path) -> None:
    r = corpora / "retrieval"
    corpus, queries = r / "apibank_corpus.jsonl", r / "apibank_lv2_queries.jsonl"
    result = RUNNER.invoke(app, ["eval", "retrieval", "--corpus", str(corpus), "--queries", str(queries), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    direct = evaluate_files(corpus, queries).report.as_dict()  # the CLI's default is the library's default
    assert (data["retriever"], data["fusion"]) == ("bm25+static", "lift")
    assert data["all@5"] == direct["all@5"] and data["any@5"] == direct["any@5"] and data["queries"] == 49
    assert data["all@5"] >= 0.8  # GetUserToken comes in through the inferred prerequisite
    bm25 = RUNNER.invoke(app, ["eval", "retrieval", "--corpus", str(corpus), "--queries", str(queries), "--json",
                               "--retriever", "bm25"])
    assert bm25.exit_code == 0, bm25.output
    lexical = json.loads(bm25.output)
    assert (lexical["retriever"], lexical["fusion"]) == ("bm25", None)
    assert lexical["mrr"] == evaluate_files(corpus, queries, retriever="bm25").report.as_dict()["mrr"]
    plain = evaluate_files(corpus, queries, retriever="bm25", prerequisites=False, group_weight=0.0).report
    assert plain.all_at[5] < 0.5


def test_cli_table_and_pool(corpora: Path) -> None:
    r = corpora / "retrieval"
    args = ["eval", "retrieval", "--corpus", str(r / "apibank_corpus.jsonl"),
            "--queries", str(r / "apibank_lv2_queries.jsonl")]
    result = RUNNER.invoke(app, [*args, "--pool-size", "300", "--distractors", str(corpora / "mcp_tools")])
    assert result.exit_code == 0, result.output
    assert "300 tools" in result.output and "recall@k" in result.output and "p50" in result.output


def test_cli_errors_are_clear(corpora: Path, tmp_path: Path) -> None:
    r = corpora / "retrieval"
    args = ["eval", "retrieval", "--corpus", str(r / "apibank_corpus.jsonl"),
            "--queries", str(r / "apibank_lv2_queries.jsonl")]
    no_pool = RUNNER.invoke(app, [*args, "--pool-size", "5000"])
    assert no_pool.exit_code == 2 and "--distractors" in no_pool.output
    bad = RUNNER.invoke(app, [*args, "--retriever", "tfidf"])
    assert bad.exit_code == 2 and "default, bm25, static, embeddings, hybrid, auto" in bad.output
    bad_fusion = RUNNER.invoke(app, [*args, "--retriever", "hybrid", "--fusion", "max"])
    assert bad_fusion.exit_code == 2
    assert "--fusion must be one of lift, gated, weighted, rrf, scores, linear" in bad_fusion.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n{}\n")
    nothing = RUNNER.invoke(app, ["eval", "retrieval", "--corpus", str(empty), "--queries", str(empty)])
    assert nothing.exit_code == 2 and "no tools" in nothing.output


def test_cli_runs_the_retriever_and_fusion_it_is_given(corpora: Path) -> None:
    r = corpora / "retrieval"
    corpus, queries = r / "apibank_corpus.jsonl", r / "apibank_lv2_queries.jsonl"
    args = ["eval", "retrieval", "--corpus", str(corpus), "--queries", str(queries), "--json"]
    result = RUNNER.invoke(app, [*args, "--retriever", "auto", "--fusion", "rrf"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["retriever"], data["fusion"]) == ("hybrid", "rrf")  # the weights are installed in the test venv
    direct = evaluate_files(corpus, queries, retriever="hybrid", fusion="rrf").report.as_dict()
    weighted = evaluate_files(corpus, queries, retriever="hybrid").report.as_dict()
    assert data["mrr"] == direct["mrr"] and direct["mrr"] != weighted["mrr"]
