"""Drift pinning: an upstream tool whose definition changed since it was pinned is classified by the
compatibility diff and handled by the upstream's policy, before the model ever sees the new definition.

| `drift =`            | compatible change          | behavioural or breaking change |
|----------------------|----------------------------|--------------------------------|
| `accept-compatible`  | accepted, the pin follows  | blocked until approved         |
| `block`              | blocked until approved     | blocked until approved         |
| `warn`               | served, logged, pending    | served, logged, pending        |

A blocked tool is served with its *pinned* definition (the changed description never reaches the model) and
every call answers `permission_denied` / `TOOL_DEFINITION_CHANGED` (escalate) with the diff's summary, which
also writes a stop record. `toolproof gateway pins approve` makes the pending definition the pin.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

import mcp_types as types

from ..contract.context import CallContext
from ..contract.errors import PermissionDenied
from ..contract.tool import Tool
from ..stores import Store
from ..stores.pins import Pin
from ..versions import Change, ToolEntry, counts, diff_tools, entry_from_mcp

log = logging.getLogger("toolproof.mcp.drift")

CODE: Final = "TOOL_DEFINITION_CHANGED"
Action = Literal["pinned", "unchanged", "accepted", "warned", "blocked"]


@dataclass(frozen=True, slots=True)
class Drift:
    """What the check found for one upstream tool and what the policy made of it."""

    upstream: str
    tool: str
    action: Action
    changes: tuple[Change, ...] = ()
    pinned: dict[str, Any] | None = None  # the pinned definition a blocked tool is served with

    def summary(self) -> str:
        by = counts(self.changes)
        kinds = ", ".join(f"{c.kind} at {c.pointer or '/'}" for c in self.changes[:5])
        more = f" and {len(self.changes) - 5} more" if len(self.changes) > 5 else ""
        return (f"{by['breaking']} breaking, {by['behavioural']} behavioural, {by['compatible']} compatible: "
                f"{kinds}{more}")


def entry_of(remote: types.Tool) -> ToolEntry:
    """An upstream tool as the lock and the diff see it."""
    return entry_from_mcp(remote.model_dump(by_alias=True, mode="json", exclude_none=True))


def _decide(policy: str, changes: Sequence[Change]) -> Action:
    if policy == "warn":
        return "warned"
    if policy == "accept-compatible" and all(c.change_class == "compatible" for c in changes):
        return "accepted"
    return "blocked"


def check_tool(store: Store, upstream: str, policy: str, remote: types.Tool, now: float) -> Drift:
    """Pin on first sight; else diff against the pin and apply the policy (recording what waits for review)."""
    current = entry_of(remote)
    pin = store.pin_claim(Pin(upstream, current.name, current.version, current.to_dict(), now))
    changes = tuple(diff_tools(ToolEntry.from_dict(pin.definition), current))
    if not changes:
        if pin.fingerprint != current.version or pin.pending is not None:  # text the diff ignores, or reverted
            store.pin_put(replace(pin, fingerprint=current.version, definition=current.to_dict(), pending=None,
                                  pending_fingerprint=None, changes=[]))
        return Drift(upstream, current.name, "pinned" if pin.pinned_at == now else "unchanged")
    action = _decide(policy, changes)
    if action == "accepted":
        store.pin_put(replace(pin, fingerprint=current.version, definition=current.to_dict(), pinned_at=now,
                              pending=None, pending_fingerprint=None, changes=[], note="accepted: compatible"))
    else:
        store.pin_put(replace(pin, pending=current.to_dict(), pending_fingerprint=current.version,
                              changes=[c.to_dict() for c in changes], seen_at=now))
    drift = Drift(upstream, current.name, action, changes, pin.definition)
    log.warning("upstream %s tool %s changed (%s): %s", upstream, current.name, action, drift.summary())
    return drift


def pinned_remote(drift: Drift, remote: types.Tool) -> types.Tool:
    """The tool as it was pinned, to serve in place of a blocked change."""
    assert drift.pinned is not None
    d = drift.pinned
    return remote.model_copy(update={
        "description": d.get("description"), "input_schema": d.get("inputSchema") or {"type": "object"},
        "output_schema": d.get("outputSchema"),
        "annotations": types.ToolAnnotations.model_validate(d["annotations"]) if d.get("annotations") else None,
    })


def blocked(tool: Tool, drift: Drift) -> Tool:
    """`tool` answering every call with the escalate envelope: its definition changed and nobody approved it."""
    message = (f"The definition of {tool.name} changed upstream ({drift.upstream}) and was not approved; the "
               "call was not sent.")
    hint = (f"Do not call it again; tell a person to review it with `toolproof gateway pins show "
            f"{drift.upstream} {drift.tool}`. Change: {drift.summary()}")

    async def refuse(arguments: dict[str, Any], context: CallContext) -> Any:
        raise PermissionDenied(message, code=CODE, hint=hint, effect_done=False,
                               state={"upstream": drift.upstream, "tool": drift.tool,
                                      "changes": [c.to_dict() for c in drift.changes]})

    return replace(tool, handler=refuse)
