"""Effect rules (TP5xx): a write says whether a retry is safe; MCP tools carry their behaviour hints."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

from .._config import LintConfig
from .._model import ToolDef
from .._text import WRITE_VERBS, folded, name_words
from ._base import Hit, Rule

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


def check_read_only_and_destructive(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    ann = _annotations(tool)
    if ann.get("readOnlyHint") is True and ann.get("destructiveHint") is True:
        yield Hit(tool, "/annotations", f"{tool.label!r} is marked both read-only and destructive",
                  "Keep one: readOnlyHint true for a tool that changes nothing, or readOnlyHint false with "
                  "destructiveHint true for one that deletes or overwrites.")


#: A description asking the model to mint a new key on every call: "unique for every request", "a new UUID
#: for each call", "generate a fresh idempotency key each time". A retry then carries a new key and the
#: owner does the write twice.
_FRESH_KEY: Final = re.compile(
    r"\b(?:unique|new|fresh|different|random)\b[^.;]{0,40}?\b(?:for|on|per|with|in)\s+(?:each|every|any)\s+"
    r"(?:new\s+)?(?:request|call|invocation|attempt|retry|time|operation)\b"
    r"|\b(?:generate|create|mint|use)\s+a\s+(?:new|fresh|different|random)\b[^.;]{0,30}?\b(?:each|every)\s+time\b")
#: Every match of `_FRESH_KEY` holds one of these: a text with none (most) is not searched from every position.
_FRESH_WORDS: Final = ("unique", "new", "fresh", "different", "random")
_KEY_NAME: Final = re.compile("key|token|uuid|nonce|id|reference|request")  # anywhere in a parameter's name


def _fresh_key_texts(tool: ToolDef) -> Iterator[tuple[str, str]]:
    """(pointer, text) of the tool's description and of each key-like parameter's description."""
    yield tool.description_pointer, tool.description_text
    for node in tool.params:
        if node.name and node.description and _KEY_NAME.search(node.name.lower()):
            yield node.pointer + "/description", node.description


def check_fresh_key_per_call(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    for pointer, text in _fresh_key_texts(tool):
        low = folded(text)  # lower case, one character for one: the span is the same
        found = _FRESH_KEY.search(low) if any(w in low for w in _FRESH_WORDS) else None
        if found:
            quoted = text[found.start():found.end()]
            yield Hit(tool, pointer, f"the description asks for a new key on every call ({quoted!r}): a "
                      "retried call then carries another key and the write happens twice",
                      "Ask for one key per intended operation, reused on retries; better, derive it in the code.")
            return


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
    Rule("TP504", "read-only-and-destructive", "error", "A tool is marked both read-only and destructive.",
         "The two hints contradict each other; clients pick one at random (skip or ask for confirmation).",
         "Keep the hint that is true.", tool_check=check_read_only_and_destructive, family="effects"),
    Rule("TP505", "fresh-key-per-call", "warning", "A description tells the model to send a new key (id, token, "
         "UUID) on every request.", "A retried call then carries a new key, so the owner runs the write twice "
         "(the double charge idempotency keys exist to prevent).", "One key per intended operation, reused on "
         "retries.", tool_check=check_fresh_key_per_call, family="effects"),
)
