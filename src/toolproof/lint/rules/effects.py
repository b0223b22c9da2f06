"""Effect rules (TP5xx): a write says whether a retry is safe; MCP tools carry their behaviour hints."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from ..config import LintConfig
from ..model import ToolDef
from ..text import WRITE_VERBS, name_words
from .base import Hit, Rule

_DESTRUCTIVE: Final = frozenset({"delete", "remove", "drop", "erase", "cancel", "create", "update", "write",
                                 "insert", "upload", "send", "post", "purchase", "pay", "transfer", "place"})


def _annotations(tool: ToolDef) -> dict[str, Any]:
    return tool.annotations if isinstance(tool.annotations, dict) else {}


def _verb(tool: ToolDef) -> str | None:
    words = name_words(tool.label.rsplit(".", 1)[-1])
    return words[0] if words else None


def is_write(tool: ToolDef) -> bool:
    """From the code's fact, else the annotations, else a write verb leading the name."""
    if tool.effect is not None:
        return tool.effect == "write"
    ann = _annotations(tool)
    if ann.get("readOnlyHint") is True:
        return False
    if ann.get("readOnlyHint") is False or ann.get("destructiveHint") is True:
        return True
    return _verb(tool) in WRITE_VERBS


def check_write_idempotency(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if not is_write(tool):
        return
    declared = tool.idempotent if tool.idempotent is not None else _annotations(tool).get("idempotentHint")
    if declared is True:
        return
    pointer = "/annotations/idempotentHint" if tool.format == "mcp" else tool.name_pointer
    what = "declares it is not idempotent" if declared is False else "declares no idempotency"
    yield Hit(tool, pointer, f"{tool.label!r} writes and {what}: a retry after a timeout may do it twice",
              "Make the write idempotent (a key the code builds, enforced by a unique constraint) and declare it "
              "(idempotent=True / idempotentHint: true).")


def check_no_annotations(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if tool.format != "mcp":
        return
    ann = _annotations(tool)
    if not any(k in ann for k in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")):
        yield Hit(tool, "/annotations", "MCP tool has no behaviour annotations (readOnlyHint, destructiveHint, "
                  "idempotentHint, openWorldHint)", "Add annotations so clients can ask before writes and retry "
                  "reads safely.")


def check_contradiction(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    ann = _annotations(tool)
    verb = _verb(tool)
    if (ann.get("readOnlyHint") is True or tool.effect == "read") and verb in _DESTRUCTIVE:
        yield Hit(tool, "/annotations/readOnlyHint" if tool.format == "mcp" else tool.name_pointer,
                  f"{tool.label!r} is marked read-only but its name starts with {verb!r}",
                  "Fix the annotation or the name; clients skip confirmation for read-only tools.")


RULES: Final = (
    Rule("TP501", "write-no-idempotency", "warning", "A write does not declare itself idempotent.",
         "An agent retries after timeouts; a non-idempotent write then happens twice.",
         "Enforce an idempotency key in the owner and declare it.", tool_check=check_write_idempotency,
         family="effects"),
    Rule("TP502", "mcp-no-annotations", "advice", "An MCP tool has no behaviour annotations.",
         "Clients cannot tell reads from writes, so they confirm everything or nothing.",
         "Add readOnlyHint / destructiveHint / idempotentHint / openWorldHint.", tool_check=check_no_annotations,
         family="effects"),
    Rule("TP503", "annotation-contradicts-name", "warning", "A tool marked read-only is named like a write.",
         "Clients skip confirmation for read-only tools.", "Fix the annotation or the name.",
         tool_check=check_contradiction, family="effects"),
)
