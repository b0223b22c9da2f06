"""Gateway tool names: unique, inside `^[a-zA-Z0-9_-]{1,64}$`, prefixed with the upstream name when needed.

Clients reject dots, colons and slashes in tool names, so the separator is made of `_`/`-` only. A name
that still clashes after prefixing is an error at start that names both sources, never a silent drop.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ..contract._errors import DefinitionError
from ._config import NamingPolicy

_INVALID: Final = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME: Final = 64


class NameClash(DefinitionError):
    """Two upstream tools would have the same gateway name, or a name cannot fit the MCP limits."""


@dataclass(frozen=True, slots=True)
class Origin:
    """One upstream tool: which upstream, its name there, and the base name to use here (after a rename)."""

    upstream: str
    remote_name: str
    base_name: str | None = None


def sanitize(name: str) -> str:
    """Characters MCP clients reject become `_` (`files.read` -> `files_read`)."""
    clean = _INVALID.sub("_", name)
    return clean or "tool"


def assign_names(origins: Sequence[Origin], policy: NamingPolicy) -> dict[Origin, str]:
    """The gateway name of every upstream tool, or `NameClash` with a message that names both sources."""
    bases = {o: sanitize(o.base_name or o.remote_name) for o in origins}
    counts = Counter(bases.values())
    names: dict[Origin, str] = {}
    taken: dict[str, Origin] = {}
    for origin in origins:
        base = bases[origin]
        prefixed = policy.prefix == "always" or counts[base] > 1
        name = f"{origin.upstream}{policy.separator}{base}" if prefixed else base
        if len(name) > MAX_NAME:
            raise NameClash(
                f"tool {origin.remote_name!r} of upstream {origin.upstream!r} would be named {name!r} "
                f"({len(name)} characters; MCP allows {MAX_NAME}): use a shorter upstream name or "
                f"[upstreams.{origin.upstream}.tools.{origin.remote_name}] rename = \"...\""
            )
        other = taken.get(name)
        if other is not None:
            raise NameClash(
                f"tool name clash: {other.upstream}/{other.remote_name} and {origin.upstream}/{origin.remote_name} "
                f"would both be exposed as {name!r}; rename one ([upstreams.NAME.tools.TOOL] rename = \"...\") "
                "or set prefix = \"always\""
            )
        taken[name] = origin
        names[origin] = name
    return names
