"""Tool definitions as a versioned contract: a lock file, a compatibility diff, and the rules it applies.

Pure: it reads definitions (from `contract` and `catalog`) and returns values; loading files and servers is
the CLI's and the gateway's business.
"""

from .._surface import publish_all
from ._diff import Change, counts, diff_locks, diff_tools, fails, worst
from ._lock import (
    LOCK_FORMAT,
    ErrorContract,
    Lock,
    ToolEntry,
    dumps_lock,
    entry_from_mcp,
    is_lock,
    loads_lock,
    lock_tools,
    lock_toolset,
)
from ._rules import CLASSES, NEEDS, RULES, ChangeClass, Rule, classify

__all__ = [
    "CLASSES",
    "LOCK_FORMAT",
    "NEEDS",
    "RULES",
    "Change",
    "ChangeClass",
    "ErrorContract",
    "Lock",
    "Rule",
    "ToolEntry",
    "classify",
    "counts",
    "diff_locks",
    "diff_tools",
    "dumps_lock",
    "entry_from_mcp",
    "fails",
    "is_lock",
    "loads_lock",
    "lock_tools",
    "lock_toolset",
    "worst",
]

publish_all(globals())
