"""Listing rules (TP406): what only a live server shows, by listing it twice. MCP 2026-07-28 says a server
SHOULD return `tools/list` in a deterministic order: clients cache and hash the list, and a model API's prompt
cache only hits on a byte-identical tools block."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from .._config import LintConfig
from .._model import ToolDef
from ._base import Hit, Rule

_FIX: Final = ("Sort tools/list by name or keep registration order, so every listing of the server gives the same "
               "order.")


def _listings(tools: Sequence[ToolDef]) -> Iterator[list[ToolDef]]:
    """The tools of each relisted server in the group, in first-listing order: one server listed by two
    `--mcp-command` options holds two lists, each with its own second order (the same object on every tool)."""
    by_listing: dict[int, list[ToolDef]] = {}
    for t in tools:
        if t.relisted_names is not None:
            by_listing.setdefault(id(t.relisted_names), []).append(t)
    yield from by_listing.values()


def check_order_unstable(tools: Sequence[ToolDef], config: LintConfig) -> Iterator[Hit]:
    """Once per relisted server whose second `tools/list` gave another order (or other tools) than the first."""
    for listed in _listings(tools):
        first = tuple(t.label for t in listed)
        second = listed[0].relisted_names
        assert second is not None
        if first == second:
            continue
        at = next(i for i in range(max(len(first), len(second)))
                  if i >= len(first) or i >= len(second) or first[i] != second[i])
        was = repr(first[at]) if at < len(first) else "nothing"
        now = repr(second[at]) if at < len(second) else "nothing"
        count = (f"{len(first)} tools" if len(first) == len(second) else
                 f"{len(first)} tools, then {len(second)}")
        yield Hit(None, f"/tools/{at}", f"two tools/list calls gave different orders ({count}): position {at + 1} "
                  f"held {was} the first time and {now} the second; a client that caches or hashes the list sees "
                  "a new list each time", _FIX)


RULES: Final = (
    Rule("TP406", "toolset-order-unstable", "warning", "A live server's tools/list gives another order each time "
         "(two listings compared; MCP servers only).", "MCP 2026-07-28 asks servers for a deterministic order: "
         "clients cache and hash the list, and a model API's prompt cache misses on a reordered tools block.",
         _FIX, toolset_check=check_order_unstable, family="toolset"),
)
