"""Exactly-once writes: idempotency keys built by our code (`keys`) and the intent journal over a store
(`journal`: claim, replay or refuse a repeat, record, reconcile, prune; written once, as steps)."""

from __future__ import annotations

from .._surface import publish_all
from ._journal import SETTLEMENTS, Claim, Journal, settle, settlement
from ._keys import KeyParts, key_parts_for

__all__ = ["SETTLEMENTS", "Claim", "Journal", "KeyParts", "key_parts_for", "settle", "settlement"]

publish_all(globals())
