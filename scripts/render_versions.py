"""Render the two generated regions of docs/versions.md: the rules table (`versions-rules`, from
`toolproof.versions.RULES`) and the diff of the two versions of the GitHub MCP server's tools in the corpora
(`versions-corpus`). `python scripts/render_versions.py` rewrites both; tests/versions/test_docs_regions.py
fails when the docs and this script disagree.

Old: each of the 46 historical snapshots (tools removed since, and feature-flag variants of kept tools).
New: the 117 tools at head. Each snapshot is diffed against the head tool of the same name (a removed tool
when there is none), so two snapshots of one tool are two diffs.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
CORPUS: Final = ROOT / "tests" / "data" / "corpora" / "mcp_tools"
DOC: Final = ROOT / "docs" / "versions.md"
REGIONS: Final = ("versions-rules", "versions-corpus")


def _tools(name: str) -> list[dict[str, Any]]:
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["tool"] for line in lines if line.strip()]


def corpus_changes() -> tuple[int, int, list[Any]]:
    """(historical snapshots, head tools, every change)."""
    from toolproof.versions import diff_locks, entry_from_mcp, lock_tools

    head = {t["name"]: entry_from_mcp(t) for t in _tools("github_mcp_server_toolsnaps.jsonl")}
    old = _tools("github_mcp_server_toolsnaps_historical_removed.jsonl")
    changes = []
    for snap in old:
        entry = entry_from_mcp(snap)
        now = [head[entry.name]] if entry.name in head else []
        changes.extend(diff_locks(lock_tools([entry]), lock_tools(now)))
    return len(old), len(head), changes


def render() -> str:
    from toolproof.versions import CLASSES, RULES, classify

    n_old, n_head, changes = corpus_changes()
    by_class = Counter(c.change_class for c in changes)
    by_kind = Counter((c.kind, c.part) for c in changes)
    tools = {c.change_class: len({c2.tool for c2 in changes if c2.change_class == c.change_class})
             for c in changes}
    rows = [f"{n_old} historical snapshots diffed against the {n_head} tools at head: {len(changes)} changes.", "",
            "| class | changes | tools |", "|---|---:|---:|"]
    rows += [f"| {k} | {by_class.get(k, 0)} | {tools.get(k, 0)} |" for k in CLASSES]
    rows += ["", "| kind | part | class | changes |", "|---|---|---|---:|"]
    for (kind, part), n in sorted(by_kind.items(), key=lambda kv: (-kv[1], kv[0])):
        assert kind in RULES
        rows.append(f"| {kind} | {part} | {classify(kind, part)} | {n} |")
    return "\n".join(rows) + "\n"


#: Which parts a kind can occur in: the others show a dash.
_WHERE: Final = (("tool-", ("tools",)), ("error-class-", ("errors",)), ("safety-", ("behaviour",)),
                 ("title-", ("behaviour",)), ("hint-", ("behaviour",)), ("", ("input", "output")))
_COLUMNS: Final = (("input",), ("output",), ("tools", "errors"), ("behaviour",))


def render_rules() -> str:
    from toolproof.versions import RULES, classify

    rows = ["| kind | keeps | input | output | tools, error contract | annotations | why |",
            "|---|---|---|---|---|---|---|"]
    for r in RULES.values():
        parts = next(where for prefix, where in _WHERE if r.kind.startswith(prefix))
        cells = []
        for column in _COLUMNS:
            part = next((p for p in column if p in parts), None)
            cls = classify(r.kind, part) if part else "-"  # type: ignore[arg-type]
            cells.append(f"**{cls}**" if cls == "breaking" else cls)
        rows.append(f"| {r.kind} | {r.keeps.upper()} | " + " | ".join(cells) + f" | {r.why} |")
    return "\n".join(rows) + "\n"


def _region(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)


def update(text: str) -> str:
    """The document with every region rendered afresh."""
    for name, body in (("versions-rules", render_rules()), ("versions-corpus", render())):
        text = _region(name).sub(_replacement(body), text)
    return text


def _replacement(body: str) -> Callable[[re.Match[str]], str]:
    return lambda m: m.group(1) + body + m.group(2)


def main() -> int:
    text = DOC.read_text(encoding="utf-8")
    missing = [n for n in REGIONS if not _region(n).search(text)]
    if missing:
        print(f"docs/versions.md has no region {missing}", file=sys.stderr)
        return 1
    DOC.write_text(update(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
