"""The catalogue of tools and what a model is shown of it: `Toolset`, its exports, per-turn selection, routing.

`Toolset` needs nothing optional; `tools_for_turn`, `search_tools_tool`, `definition_of`, `Router` and `Route`
rank tools and need the `toolproof[retrieval]` extra, so they load on first use.
"""

from __future__ import annotations

from importlib import import_module

from .._surface import publish, publish_all
from ._toolset import Toolset

#: Each lazy name and its module, spelled out whole so a rename of the module finds it.
_LAZY = {
    "Route": "toolproof.catalog._route",
    "Router": "toolproof.catalog._route",
    "definition_of": "toolproof.catalog._turn",
    "search_tools_tool": "toolproof.catalog._turn",
    "tools_for_turn": "toolproof.catalog._turn",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        if value.__module__ != __name__:  # the first time it is asked for: shown where it is imported from
            publish(value, __name__)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Route", "Router", "Toolset", "definition_of", "search_tools_tool", "tools_for_turn"]

publish_all(globals())
