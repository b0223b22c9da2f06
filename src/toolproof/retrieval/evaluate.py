"""Recall@k, all@k / any@k, MRR and latency of a search function over gold queries."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .corpora import GoldQuery, base_id

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


def evaluate(
    search: Callable[[str, int], Sequence[str]],
    queries: Sequence[GoldQuery],
    *,
    depth: int = max(KS),
    on_query: Callable[[QueryResult], None] | None = None,
) -> RetrievalReport:
    """Run `search(text, depth) -> ranked ids` over every query, timing each call."""
    results: list[QueryResult] = []
    for query in queries:
        start = time.perf_counter()
        ranked = search(query.text, depth)
        elapsed = (time.perf_counter() - start) * 1000
        result = judge(query, ranked, elapsed)
        results.append(result)
        if on_query is not None:
            on_query(result)
    return summarize(results)
