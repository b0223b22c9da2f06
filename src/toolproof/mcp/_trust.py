"""Trust: what an upstream tool's effect and idempotency are taken to be, and why.

The MCP spec says clients MUST treat tool annotations as untrusted unless they come from a trusted server.
So an untrusted server's `readOnlyHint`/`idempotentHint` are shown to nobody as facts: without trusted
information a tool is a non-idempotent write, and a non-idempotent write is never retried automatically.
The operator's per-tool override always wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import mcp_types as types

from ..contract._tool import Effect, Risk
from ._config import ToolOverride

Source = Literal["override", "trusted annotations", "untrusted: assumed non-idempotent write"]


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """The effect, idempotency, risk and timeout a gateway applies to one upstream tool."""

    effect: Effect
    idempotent: bool
    risk: Risk
    timeout_s: float
    source: Source


def derive_policy(
    annotations: types.ToolAnnotations | None,
    *,
    trusted: bool,
    override: ToolOverride | None,
    default_timeout_s: float,
) -> ToolPolicy:
    """Combine the operator's override, and the annotations only when the server is trusted."""
    if trusted:
        read_only = annotations is not None and annotations.read_only_hint is True
        effect: Effect = "read" if read_only else "write"
        idempotent = read_only or (annotations is not None and annotations.idempotent_hint is True)
        source: Source = "trusted annotations"
    else:
        effect, idempotent, source = "write", False, "untrusted: assumed non-idempotent write"
    risk: Risk = "low"
    timeout_s = default_timeout_s
    if override is not None:
        if override.effect is not None:
            effect = override.effect
            # A read declared by the operator is idempotent unless the operator says otherwise.
            idempotent = effect == "read" if override.idempotent is None else idempotent
        if override.idempotent is not None:
            idempotent = override.idempotent
        if override.risk is not None:
            risk = override.risk
        if override.timeout_s is not None:
            timeout_s = override.timeout_s
        if any(v is not None for v in (override.effect, override.idempotent, override.risk)):
            source = "override"
    return ToolPolicy(effect, idempotent, risk, timeout_s, source)
