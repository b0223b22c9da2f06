"""Text from someone toolproof does not trust (an upstream MCP server), made safe to carry as data.

A model reads tool results and tool listings inside a transcript that uses tags (`<tool_result>`, `<system>`,
chat-template tokens such as `<|im_start|>`, `[INST]`). Untrusted text that closes or opens such a tag could
pose as the harness or the system. So in untrusted text the `<` that starts anything tag-like becomes `‹`,
bracket tokens become `⟦...⟧`, and control characters (except newline and tab), bidi overrides and zero-width
characters are dropped. The words stay readable; they just cannot be markup. The one home of this rule: the
gateway applies it to results and listings, lint flags what it would change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["findings", "neutralise", "neutralise_value"]

_INVISIBLE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
# `<` followed by what would make it a tag, a closing tag, a comment/doctype, a chat token or a bracket token.
_TAG_START: Final = re.compile(r"<(?=[A-Za-z!?|\[]|/\s*[A-Za-z])")
_TOKEN: Final = re.compile(r"\[/?(INST|SYS)\]|<<\s*/?\s*SYS\s*>>", re.IGNORECASE)
# A whole role or harness tag (`<system>`, `</tool_result>`) and chat tokens `<|...`: unlike `<token>`,
# `<user value>` or `List<String>` in real descriptions, they have no business in a tool's words.
_HARNESS_TAG: Final = re.compile(
    r"<\s*/?\s*(?:system|assistant|user|human|developer|tool_result|tool_results|tool_call|tool_use|"
    r"function_results?|function_calls?|instructions?|important|im_start|im_end)\s*/?>|<\|",
    re.IGNORECASE)


def neutralise(text: str) -> str:
    """`text` without control/invisible characters and without anything a transcript could read as a tag."""
    text = _INVISIBLE.sub("", text)
    text = _TOKEN.sub(lambda m: m.group(0).replace("[", "⟦").replace("]", "⟧").replace("<<", "‹‹"), text)
    return _TAG_START.sub("‹", text)


def neutralise_value(value: Any) -> Any:
    """Every string in a JSON-like value (keys included) neutralised; other values unchanged."""
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, Mapping):
        return {neutralise(str(k)): neutralise_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [neutralise_value(v) for v in value]
    return value


def findings(text: str, *, any_tag: bool = True) -> list[str]:
    """What `neutralise` would change in `text`, by kind (`control or invisible characters`, `chat-template
    tokens`, `markup tags`): empty for clean text. For reports and lint, not for cleaning. With
    `any_tag=False` only whole role and harness tags count (`<system>`, `</tool_result>`, `<|im_start|>`),
    not the `<token>` placeholders real descriptions use: what lint calls poisoning."""
    found = []
    if _INVISIBLE.search(text):
        found.append("control or invisible characters")
    if _TOKEN.search(text):
        found.append("chat-template tokens")
    if (_TAG_START if any_tag else _HARNESS_TAG).search(text):
        found.append("markup tags")
    return found
