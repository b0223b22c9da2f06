"""Pins: the reviewed definition of each upstream tool, kept in the store so a fleet of gateways agrees.

A pin is written on first sight (or approved by a person); a changed definition the gateway did not accept
waits beside it as `pending`, with the diff's summary, until `toolproof gateway pins approve` makes it the pin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Pin:
    """One upstream tool's pinned definition (a lock entry as a dict) and what is waiting for review."""

    upstream: str
    tool: str
    fingerprint: str
    definition: dict[str, Any]
    pinned_at: float
    pending_fingerprint: str | None = None
    pending: dict[str, Any] | None = None
    changes: list[dict[str, Any]] = field(default_factory=list)  # the diff of pending against the pin
    seen_at: float | None = None  # when the pending definition was last seen
    note: str | None = None  # who approved what, and why
