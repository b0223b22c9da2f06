"""The public retrieval sets the benchmarks judge on, as (tool entries, gold queries).

Three ship as files (LiveMCPBench, StableToolBench, API-Bank level 2: multi-step tasks). The fourth is derived
here from BFCL v4 (Apache-2.0): every question of `simple_python`, `live_simple`, `multiple` and
`live_multiple` must find the one function its ground truth calls, among all the distinct functions of those
four files (a function defined the same way by several questions is one tool). Single-tool and mostly
paraphrased ("Find the area of a triangle" for `calculate_triangle_area`), it is the set where meaning
matters most.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests._data import CORPORA
from toolproof.retrieval._corpora import GoldQuery, load_entries, load_queries
from toolproof.retrieval._entries import ToolEntry, entry_from_definition

__all__ = ["BFCL_FILES", "load_set", "set_names"]

R = CORPORA / "retrieval"
FILES = {
    "StableToolBench": (R / "stabletoolbench_corpus.jsonl", R / "stabletoolbench_queries.jsonl"),
    "LiveMCPBench": (R / "livemcpbench_corpus.jsonl", R / "livemcpbench_queries.jsonl"),
    "API-Bank lv2": (R / "apibank_corpus.jsonl", R / "apibank_lv2_queries.jsonl"),
}
BFCL_FILES = ("simple_python", "live_simple", "multiple", "live_multiple")


def set_names() -> list[str]:
    return [*FILES, "BFCL single-tool"]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _question_text(question: Any) -> str:
    turns = question[0] if question and isinstance(question[0], list) else question
    return " ".join(t["content"] for t in turns if isinstance(t, dict) and t.get("role") == "user")


def bfcl_single_tool() -> tuple[list[ToolEntry], list[GoldQuery]]:
    """All distinct functions of the four BFCL files, and each question with the id of the one it calls."""
    folder = CORPORA / "bfcl" / "v4"
    ids: dict[str, str] = {}
    entries: list[ToolEntry] = []
    queries: list[GoldQuery] = []
    for part in BFCL_FILES:
        answers = {a["id"]: a["ground_truth"] for a in _lines(folder / "possible_answer" / f"BFCL_v4_{part}.json")}
        for row in _lines(folder / f"BFCL_v4_{part}.json"):
            by_name = {}
            for fn in row["function"]:
                key = json.dumps(fn, sort_keys=True)
                if key not in ids:
                    ids[key] = f"bfcl/{len(ids)}::{fn['name']}"
                    entries.append(entry_from_definition(fn, id=ids[key]))
                by_name[fn["name"]] = ids[key]
            truth = answers.get(row["id"])
            called = next(iter(truth[0])) if truth else None
            if called in by_name:
                queries.append(GoldQuery(row["id"], _question_text(row["question"]), ((by_name[called],),)))
    return entries, queries


def load_set(name: str) -> tuple[list[ToolEntry], list[GoldQuery]]:
    if name == "BFCL single-tool":
        return bfcl_single_tool()
    corpus, queries = FILES[name]
    return load_entries(corpus), load_queries(queries)
