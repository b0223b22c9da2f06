"""Recall@k, all@k / any@k, MRR and latency of a search function over gold queries."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._corpora import GoldQuery, base_id
from ._history import Usage, UsageHistory
from ._hybrid import DEFAULT_FUSION

KS: tuple[int, ...] = (1, 3, 5, 10)


@dataclass(frozen=True, slots=True)
class QueryResult:
    qid: str
    ranked: tuple[str, ...]
    steps_found_at: tuple[int | None, ...]  # 1-based rank of the first id satisfying each step
    latency_ms: float


@dataclass(frozen=True, slots=True)
class RetrievalReport:
    """Averages over queries. recall@k: share of a query's steps in the top k; all@k: every step; any@k: one."""

    queries: int
    recall: dict[int, float]
    all_at: dict[int, float]
    any_at: dict[int, float]
    mrr: float
    latency_p50_ms: float
    latency_p95_ms: float
    results: tuple[QueryResult, ...] = field(repr=False, default=())

    def as_dict(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {"queries": self.queries}
        for k in sorted(self.recall):
            out[f"recall@{k}"] = round(self.recall[k], 4)
        for k in sorted(self.all_at):
            out[f"all@{k}"] = round(self.all_at[k], 4)
            out[f"any@{k}"] = round(self.any_at[k], 4)
        out["mrr"] = round(self.mrr, 4)
        out["latency_p50_ms"] = round(self.latency_p50_ms, 4)
        out["latency_p95_ms"] = round(self.latency_p95_ms, 4)
        return out


def judge(query: GoldQuery, ranked: Sequence[str], latency_ms: float) -> QueryResult:
    position = {base_id(tool_id): i + 1 for i, tool_id in reversed(list(enumerate(ranked)))}
    found: list[int | None] = []
    for step in query.steps:
        ranks = [position[t] for t in step if t in position]
        found.append(min(ranks) if ranks else None)
    return QueryResult(query.qid, tuple(ranked), tuple(found), latency_ms)


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def summarize(results: Sequence[QueryResult], ks: Sequence[int] = KS) -> RetrievalReport:
    n = max(1, len(results))
    recall = {k: sum(sum(1 for r in q.steps_found_at if r and r <= k) / len(q.steps_found_at)
                     for q in results) / n for k in ks}
    all_at = {k: sum(all(r is not None and r <= k for r in q.steps_found_at) for q in results) / n for k in ks}
    any_at = {k: sum(any(r is not None and r <= k for r in q.steps_found_at) for q in results) / n for k in ks}
    mrr = sum(1 / min((r for r in q.steps_found_at if r), default=float("inf")) for q in results) / n
    latencies = [q.latency_ms for q in results]
    return RetrievalReport(
        queries=len(results),
        recall=recall,
        all_at=all_at,
        any_at=any_at,
        mrr=mrr,
        latency_p50_ms=statistics.median(latencies) if latencies else 0.0,
        latency_p95_ms=percentile(latencies, 0.95),
        results=tuple(results),
    )


def gold_history(gold: Sequence[GoldQuery]) -> UsageHistory:
    """Usage history as a trail of past turns would hold it if each had called its gold tools (the first id of
    each step), keyed by query id so that an evaluation can hold one out."""
    return UsageHistory(Usage(q.text, tuple(s[0] for s in q.steps), key=q.qid) for q in gold)


@dataclass(frozen=True, slots=True)
class BenchmarkRun:
    """One evaluated configuration: the report plus what was measured (pool size, build time)."""

    report: RetrievalReport
    pool_size: int
    corpus_size: int
    build_s: float
    retriever: str
    history: bool


def evaluate_files(
    corpus: str | Path,
    queries: str | Path,
    *,
    retriever: str = "default",
    fusion: str = DEFAULT_FUSION,
    pool_size: int = 0,
    distractors: Sequence[str | Path] = (),
    seed: int = 0,
    history: bool = False,
    prerequisites: bool = True,
    group_weight: float = 0.5,
    model_dir: str | None = None,
    static_model_dir: str | None = None,
    cache_dir: str | None = None,
    on_start: Callable[[int], None] | None = None,
    on_query: Callable[[QueryResult], None] | None = None,
) -> BenchmarkRun:
    """Index a corpus file (plus distractors up to `pool_size`) and score its queries file.

    `history=True` adds usage history learned from the *other* queries' gold tools (leave-one-out): what an
    index fed by an audit trail of past runs would know, never the query's own answer.
    """
    from ._corpora import build_pool, load_distractors, load_entries, load_queries
    from ._index import ToolIndex

    entries = load_entries(corpus)
    gold = load_queries(queries)
    if not entries:
        raise ValueError(f"no tools found in {corpus}")
    if not gold:
        raise ValueError(f"no queries with gold tools found in {queries}")
    pool = entries
    if pool_size > len(entries):
        if not distractors:
            raise ValueError(f"--pool-size {pool_size} is larger than the corpus ({len(entries)}): give --distractors")
        pool = build_pool(entries, load_distractors(distractors), pool_size, seed=seed)
    usage = gold_history(gold) if history else None
    start = time.perf_counter()
    index = ToolIndex(pool, retriever=retriever, fusion=fusion, infer_prerequisites=prerequisites,  # type: ignore[arg-type]
                      history=usage, group_weight=group_weight, model_dir=model_dir, static_model_dir=static_model_dir,
                      cache_dir=cache_dir)
    build_s = time.perf_counter() - start
    if on_start is not None:
        on_start(len(gold))
    results: list[QueryResult] = []
    for query in gold:
        t0 = time.perf_counter()
        ranked = index.search_ids(query.text, max(KS), exclude_history=query.qid)
        result = judge(query, ranked, (time.perf_counter() - t0) * 1000)
        results.append(result)
        if on_query is not None:
            on_query(result)
    return BenchmarkRun(summarize(results), len(pool), len(entries), build_s, index.retriever_name, history)
