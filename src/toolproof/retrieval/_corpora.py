"""Loading the public retrieval benchmarks and distractor pools as `ToolEntry` lists and gold queries.

Formats read (one JSON object a line): LiveMCPBench (`server`, `name`, `inputSchema`), StableToolBench
(`tool_name`, `api_name`, `required_parameters`), API-Bank (`input_parameters`), MCP `tools/list` captures
(`server`, `tool`), and BFCL question files (`function: [...]`). Queries carry `gold_tool_ids`: a list of ids
(every one needed) or a list of lists (every step needed, any id of a step will do).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._entries import ToolEntry, entry_from_definition, parameters_of


@dataclass(frozen=True, slots=True)
class GoldQuery:
    """A request and the tools it needs: `steps[i]` lists the ids that each satisfy step i."""

    qid: str
    text: str
    steps: tuple[tuple[str, ...], ...]


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                yield value


def _stb_parameters(row: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for key in ("required_parameters", "optional_parameters"):
        for param in row.get(key) or ():
            if isinstance(param, Mapping) and isinstance(param.get("name"), str):
                out.append((param["name"], str(param.get("description") or "")))
    return tuple(out)


def entry_from_row(row: Mapping[str, Any]) -> ToolEntry | None:
    """One corpus row in any of the formats above, or None when it is not a tool."""
    if isinstance(row.get("tool"), Mapping):  # an MCP tools/list capture
        server = str(row.get("server") or "") or None
        return entry_from_definition(row["tool"], group=server)
    if "api_name" in row:  # StableToolBench
        return ToolEntry(
            id=str(row.get("tool_id") or f"{row.get('tool_name')}::{row['api_name']}"),
            name=str(row["api_name"]),
            description=str(row.get("description") or ""),
            parameters=_stb_parameters(row),
            group=str(row.get("tool_name") or "") or None,
        )
    if "input_parameters" in row:  # API-Bank
        params = row.get("input_parameters") or {}
        return ToolEntry(
            id=str(row.get("tool_id") or row["name"]),
            name=str(row["name"]),
            description=str(row.get("description") or ""),
            parameters=parameters_of({"properties": params}),
        )
    if "name" in row and ("inputSchema" in row or "description" in row):  # LiveMCPBench corpus
        server = str(row.get("server") or "") or None
        entry = entry_from_definition(row, group=server)
        return ToolEntry(
            id=str(row.get("tool_id") or entry.id),
            name=entry.name,
            description=entry.description,
            parameters=entry.parameters,
            group=entry.group,
        )
    return None


def load_entries(path: str | Path) -> list[ToolEntry]:
    """Tool entries from a corpus file, an MCP capture or a BFCL question file (functions deduplicated)."""
    path = Path(path)
    out: list[ToolEntry] = []
    seen: set[str] = set()
    for row in _json_lines(path):
        functions = row.get("function")
        if isinstance(functions, list):  # BFCL: each question carries its function definitions
            for fn in functions:
                if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                    continue
                key = json.dumps(fn, sort_keys=True, default=str)
                if key in seen:
                    continue
                seen.add(key)
                n = len(seen)  # BFCL functions are unrelated to each other: each is its own group
                out.append(entry_from_definition(fn, group=f"bfcl/{n}", id=f"bfcl/{n}::{fn['name']}"))
            continue
        entry = entry_from_row(row)
        if entry is None:
            continue
        if entry.id in seen:  # API-Bank lists two versions of some APIs under one id
            n = 2
            while f"{entry.id}#{n}" in seen:
                n += 1
            entry = ToolEntry(f"{entry.id}#{n}", entry.name, entry.description, entry.parameters, entry.group)
        seen.add(entry.id)
        out.append(entry)
    return out


def base_id(tool_id: str) -> str:
    """`AddMeeting#2` -> `AddMeeting`: a second version of a tool counts as the tool."""
    head, sep, tail = tool_id.rpartition("#")
    return head if sep and tail.isdigit() else tool_id


def load_queries(path: str | Path) -> list[GoldQuery]:
    """Queries with at least one gold tool (a query whose gold list is empty measures nothing)."""
    out: list[GoldQuery] = []
    for row in _json_lines(Path(path)):
        gold = row.get("gold_tool_ids") or []
        steps = tuple(
            tuple(str(x) for x in step) if isinstance(step, list) else (str(step),) for step in gold if step
        )
        if steps and isinstance(row.get("query"), str):
            out.append(GoldQuery(qid=str(row.get("qid", len(out))), text=row["query"], steps=steps))
    return out


def load_distractors(paths: Iterable[str | Path]) -> list[ToolEntry]:
    """Entries from files or folders (`*.json`, `*.jsonl` inside), deduplicated by name, description, parameters."""
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        files.extend(sorted([*p.glob("*.jsonl"), *p.glob("*.json")]) if p.is_dir() else [p])
    out: list[ToolEntry] = []
    seen: set[tuple[str, str, tuple[tuple[str, str], ...]]] = set()
    ids: set[str] = set()
    for file in files:
        for entry in load_entries(file):
            key = (entry.name, entry.description, entry.parameters)
            if key in seen:
                continue
            seen.add(key)
            if entry.id in ids:
                entry = ToolEntry(f"{file.stem}/{entry.id}#{len(out)}", entry.name, entry.description,
                                  entry.parameters, entry.group)
            ids.add(entry.id)
            out.append(entry)
    return out


def build_pool(
    entries: Sequence[ToolEntry], distractors: Sequence[ToolEntry], size: int, *, seed: int = 0
) -> list[ToolEntry]:
    """The corpus plus distractors up to `size` tools, shuffled deterministically.

    Distractors identical to a corpus tool are dropped. When the unique distractors run out, copies are
    added under mirror group names (`mirror2/...`), as a gateway in front of mirrored servers would see them.
    """
    if size <= len(entries):
        return list(entries)
    own = {(e.name, e.description, e.parameters) for e in entries}
    ids = {e.id for e in entries}
    fresh = [d for d in distractors if (d.name, d.description, d.parameters) not in own]
    fresh = [d if d.id not in ids else ToolEntry(f"distractor/{d.id}", d.name, d.description, d.parameters, d.group)
             for d in fresh]
    rng = random.Random(seed)
    rng.shuffle(fresh)
    need = size - len(entries)
    chosen: list[ToolEntry] = []
    copy_no = 1
    while len(chosen) < need and fresh:
        for d in fresh[: need - len(chosen)]:
            if copy_no == 1:
                chosen.append(d)
            else:
                group = f"mirror{copy_no}/{d.group or 'tools'}"
                chosen.append(ToolEntry(id=f"{group}::{d.id}", name=d.name, description=d.description,
                                        parameters=d.parameters, group=group))
        copy_no += 1
    pool = [*entries, *chosen]
    rng.shuffle(pool)
    return pool
