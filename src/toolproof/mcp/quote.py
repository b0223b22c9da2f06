"""Text from an untrusted upstream, made safe to carry as data: control and markup sequences neutralised.

A model reads tool results inside a transcript that uses tags (`<tool_result>`, `<system>`, chat-template
tokens such as `<|im_start|>`). Upstream text that closes or opens such a tag could pose as the harness or
the system. So in untrusted text the `<` that starts anything tag-like becomes `‹`, control characters
(except newline and tab), bidi overrides and zero-width characters are dropped, and quoted error text is
capped. The words stay readable; they just cannot be markup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

#: The most characters of an untrusted upstream's error text carried in an envelope.
MAX_QUOTE: Final = 2000
#: Where an untrusted upstream's error text goes in `error.state` (never `message` or `hint`).
QUOTE_KEY: Final = "untrusted_upstream_text"

_INVISIBLE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
# `<` followed by what would make it a tag, a closing tag, a comment/doctype, a chat token or a bracket token.
_TAG_START: Final = re.compile(r"<(?=[A-Za-z!?|\[]|/\s*[A-Za-z])")
_TOKEN: Final = re.compile(r"\[/?(INST|SYS)\]|<<\s*/?\s*SYS\s*>>", re.IGNORECASE)


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


def quote(text: str, *, source: str) -> dict[str, Any]:
    """An untrusted upstream's words as marked data for `error.state`: neutralised, capped, labelled."""
    clean = neutralise(" ".join(text.split()))
    truncated = len(clean) > MAX_QUOTE
    return {
        QUOTE_KEY: clean[: MAX_QUOTE - 1] + "…" if truncated else clean,
        "upstream": source,
        "truncated": truncated,
    }
