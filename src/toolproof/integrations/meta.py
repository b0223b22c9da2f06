"""The MCP `_meta` that tells `toolproof serve` who is asking: one documented key per id.

`toolproof serve` reads these keys from every `tools/call` request (`toolproof.mcp.call_context`); the
model's arguments are never used for them. Send the conversation on every call: a client that opens a new
session (so a new `toolproof serve` process over stdio) per call has no other way to say that a resend
belongs to the same conversation.
"""

from __future__ import annotations

from typing import Any

from ..mcp._server import META_CONVERSATION_ID, META_OCCURRENCE, META_PRINCIPAL, META_RUN_ID


def mcp_meta(
    conversation_id: str | None,
    *,
    principal: str | None = None,
    run_id: str | None = None,
    occurrence: int | None = None,
) -> dict[str, Any]:
    """`{"dev.toolproof/conversation_id": ..., "dev.toolproof/principal": ...}`, leaving out what is None."""
    meta: dict[str, Any] = {}
    for key, value in ((META_CONVERSATION_ID, conversation_id), (META_PRINCIPAL, principal),
                       (META_RUN_ID, run_id), (META_OCCURRENCE, occurrence)):
        if value is not None:
            meta[key] = value
    return meta
