"""An untrusted upstream's error text as quoted data: neutralised (`contract.untrusted`, the one rule for
untrusted text) and capped, under its own key of `error.state`."""

from __future__ import annotations

from typing import Any, Final

from ..contract._untrusted import neutralise, neutralise_value

__all__ = ["MAX_QUOTE", "QUOTE_KEY", "neutralise", "neutralise_value", "quote"]

#: The most characters of an untrusted upstream's error text carried in an envelope.
MAX_QUOTE: Final = 2000
#: Where an untrusted upstream's error text goes in `error.state` (never `message` or `hint`).
QUOTE_KEY: Final = "untrusted_upstream_text"


def quote(text: str, *, source: str) -> dict[str, Any]:
    """An untrusted upstream's words as marked data for `error.state`: neutralised, capped, labelled."""
    clean = neutralise(" ".join(text.split()))
    truncated = len(clean) > MAX_QUOTE
    return {
        QUOTE_KEY: clean[: MAX_QUOTE - 1] + "…" if truncated else clean,
        "upstream": source,
        "truncated": truncated,
    }
