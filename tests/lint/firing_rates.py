"""Print each rule's firing rate on each corpus as the markdown table in docs/lint.md.

`python -m tests.lint.firing_rates` from the repository root. A rate is the share of distinct tool definitions
with at least one finding of that rule (for toolset-too-many: the share of toolsets). BFCL's files repeat
function definitions across questions; they are counted once, toolsets are the questions' function lists.
"""

from __future__ import annotations

import json
from collections import defaultdict

from tests._data import CORPORA
from toolproof.lint import ALL_RULES, LintConfig, lint_tooldefs, load_file

from .conftest import corpus_files

NAMES = {
    "mcp_tools/mcp_reference_servers_tools.jsonl": "MCP reference",
    "mcp_tools/github_mcp_server_toolsnaps.jsonl": "GitHub MCP",
    "mcp_tools/github_mcp_server_toolsnaps_historical_removed.jsonl": "GitHub removed",
    "mcp_tools/docker_mcp_registry_tools.jsonl": "Docker registry",
    "mcp_tools/livemcpbench_tools.jsonl": "LiveMCPBench",
}


def rates() -> tuple[list[str], dict[str, int], dict[str, dict[str, float]]]:
    per_corpus: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    sizes: dict[str, set[str]] = defaultdict(set)
    toolsets: dict[str, set[str]] = defaultdict(set)
    for path in corpus_files():
        rel = path.relative_to(CORPORA).as_posix()
        corpus = NAMES.get(rel, "BFCL v4")
        tools = load_file(path)
        keys = {}
        for t in tools:
            key = json.dumps([t.source, t.toolset, t.name, t.description, t.input_schema], sort_keys=True,
                             default=str) if corpus != "BFCL v4" else json.dumps(t.raw, sort_keys=True, default=str)
            keys[(t.toolset, t.label)] = key
            sizes[corpus].add(key)
            toolsets[corpus].add(f"{rel}|{t.toolset}")
        for f in lint_tooldefs(tools, LintConfig(select=("ALL",))):
            if f.tool:
                per_corpus[corpus][f.code].add(keys[(f.toolset, f.tool)])
            else:
                per_corpus[corpus][f.code].add(f"{rel}|{f.toolset}")
    order = [*NAMES.values(), "BFCL v4"]
    table: dict[str, dict[str, float]] = defaultdict(dict)
    for corpus in order:
        for rule in ALL_RULES:
            hits = per_corpus[corpus].get(rule.code, set())
            base = len(toolsets[corpus]) if rule.code == "TP401" else len(sizes[corpus])
            table[rule.code][corpus] = 100 * len(hits) / base if base else 0.0
    return order, {c: len(sizes[c]) for c in order}, table


def markdown() -> str:
    order, sizes, table = rates()
    head = "| code | rule | default | " + " | ".join(f"{c} ({sizes[c]:,})" for c in order) + " |"
    lines = [head, "|" + "---|" * (len(order) + 3)]
    for rule in ALL_RULES:
        cells = " | ".join(f"{table[rule.code][c]:.1f}%" for c in order)
        lines.append(f"| {rule.code} | {rule.slug} | {'on' if rule.default_on else 'off'} | {cells} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
