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

The check runs at start and again while running (`DriftWatch`): before a call when the last listing is
older than the upstream's `drift_recheck_s`, on a client's `tools/list` past the same interval, when the
upstream announces a changed list, after it restarts, and when it refuses a call as invalid. A call to a
blocked tool re-reads its pin, so an approval made by another process lets the very next call through.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

import mcp_types as types

from ..contract._errors import PermissionDenied, ToolError, TransientUpstream
from ..contract._redaction import redact_text
from ..contract._tool import Tool
from ..stores import Store
from ..stores._pins import Pin
from ..versions import Change, ToolEntry, counts, diff_tools, entry_from_mcp
from ._connection import UpstreamConnection

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


def check_tool(store: Store, upstream: str, policy: str, remote: types.Tool, now: float, *,
               announce: bool = True) -> Drift:
    """Pin on first sight; else diff against the pin and apply the policy (recording what waits for review).
    `announce=False` logs nothing (a re-check of a change already logged)."""
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
    if announce or action == "accepted":
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


def refusal(name: str, drift: Drift) -> PermissionDenied:
    """The escalate envelope's error for a call to `name`: its definition changed and nobody approved it."""
    message = (f"The definition of {name} changed upstream ({drift.upstream}) and was not approved; the "
               "call was not sent.")
    hint = (f"Do not call it again; tell a person to review it with `toolproof gateway pins show "
            f"{drift.upstream} {drift.tool}`. Change: {drift.summary()}")
    return PermissionDenied(message, code=CODE, hint=hint, effect_done=False,
                            state={"upstream": drift.upstream, "tool": drift.tool,
                                   "changes": [c.to_dict() for c in drift.changes]})


@dataclass(slots=True)
class _Served:
    """One upstream tool as served now: its local name, the listing and verdict of the last check, and the
    fingerprint of the definition the model sees (the pinned one while blocked)."""

    local: str
    listed: types.Tool
    fingerprint: str
    drift: Drift
    shown: str
    missing: bool = False


def served_remote(drift: Drift, remote: types.Tool) -> types.Tool:
    """The definition to serve for `remote` after `drift`: the pinned one while blocked, else the listed one."""
    return pinned_remote(drift, remote) if drift.action == "blocked" else remote


class DriftWatch:
    """Re-checks one upstream's tool definitions against their pins while a gateway or an imported toolset
    runs (see the module docstring for when). Installed as the connection's `guard`: a call to a blocked
    tool is refused before anything is sent. Tools whose served definition changes are rebuilt with `build`
    and handed to `replace` (which swaps them in and tells clients); new upstream tools wait for a restart,
    since naming them could rename tools already served."""

    def __init__(
        self,
        connection: UpstreamConnection,
        store: Store,
        served: Sequence[tuple[str, types.Tool, Drift]],
        *,
        build: Callable[[types.Tool, str], Tool],
        replace: Callable[[Sequence[Tool]], Awaitable[None]],
        recheck_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.connection = connection
        self.store = store
        self.recheck_s = connection.upstream.drift_recheck_s if recheck_s is None else recheck_s
        self.listings = 0  # re-lists made while running (not the one at start)
        self._build = build
        self._replace = replace
        self._clock = clock
        self._served = {remote.name: _Served(local, remote, entry_of(remote).version, drift,
                                             entry_of(served_remote(drift, remote)).version)
                        for local, remote, drift in served}
        self._checked_at = clock()
        self._starts = connection.starts
        self._dirty = False
        self._lock = asyncio.Lock()
        self._background: asyncio.Task[None] | None = None

    def install(self) -> DriftWatch:
        """Guard the connection's calls and follow the upstream's change notifications."""
        self.connection.guard = self
        self.connection.watch_changes(self.changed)
        return self

    def close(self) -> None:
        """Stop a background re-check (before the connection closes under it)."""
        if self._background is not None:
            self._background.cancel()

    def drift(self, remote_name: str) -> Drift | None:
        """The verdict of the last check for one upstream tool."""
        served = self._served.get(remote_name)
        return served.drift if served is not None else None

    def due(self) -> bool:
        """Whether the next call or listing should re-list the upstream first."""
        return (self._dirty or self.connection.starts != self._starts
                or self._clock() - self._checked_at >= self.recheck_s)

    def changed(self) -> None:
        """The upstream said its tools changed: re-check now, in the background (calls wait for it)."""
        self._dirty = True
        if self._background is None or self._background.done():
            self._background = asyncio.get_running_loop().create_task(self._check_logged())

    async def _check_logged(self) -> None:
        try:
            await self.check()
        except Exception as exc:
            log.warning("upstream %s: drift re-check failed: %s", self.connection.upstream.name, exc)

    async def before_call(self, tool: str) -> None:
        relisted = self.due()
        if relisted:
            try:
                await self.check()
            except ToolError:
                raise
            except Exception as exc:  # fail closed: a definition nobody could check is not called
                raise TransientUpstream(
                    f"upstream {self.connection.upstream.name!r}: its tool definitions could not be re-checked "
                    f"({type(exc).__name__}: {redact_text(str(exc))[:200]}); the call was not sent",
                    code="UPSTREAM_UNAVAILABLE", effect_done=False,
                    hint="Do not change the arguments; the call was not sent. The orchestrator may retry.",
                ) from None
        served = self._served.get(tool)
        if served is None or served.drift.action != "blocked":
            return
        if not relisted:
            await self.check(only=tool)  # re-read the pin: an approval lets this very call through
        served = self._served[tool]
        if served.drift.action == "blocked":
            raise refusal(served.local, served.drift)

    async def refused(self, tool: str) -> None:
        try:
            await self.check(force=True)
        except Exception as exc:  # the refusal itself is the answer; say why the re-check did not help
            log.warning("upstream %s: drift re-check after a refused call failed: %s",
                        self.connection.upstream.name, exc)
            return
        served = self._served.get(tool)
        if served is not None and served.drift.action == "blocked":
            raise refusal(served.local, served.drift)

    async def check(self, *, force: bool = False, only: str | None = None) -> None:
        """Re-list the upstream (or, with `only`, re-read one tool's pin against the last listing), judge every
        changed definition with the pin policy, and swap in the tools whose served definition changed."""
        async with self._lock:
            if only is None:
                if not force and not self.due():
                    return  # another task checked while this one waited
                dirty, self._dirty = self._dirty, False  # a notice arriving during the listing sets it again
                try:
                    async with asyncio.timeout(self.connection.upstream.timeout_s):
                        listed = await self.connection.list_tools()
                except BaseException:
                    self._dirty = self._dirty or dirty
                    raise
                self._checked_at = self._clock()
                self._starts = self.connection.starts  # the listing came from the session that runs now
                self.listings += 1
                by_name = {t.name: t for t in listed}
            else:
                served = self._served[only]
                by_name = {only: served.listed}
            verdicts = await asyncio.to_thread(self._judge, by_name, only)
            tools = [self._apply(name, remote, drift) for name, remote, drift in verdicts]
            rebuilt = [t for t in tools if t is not None]
            if rebuilt:
                await self._replace(rebuilt)

    def _judge(self, listed: Mapping[str, types.Tool], only: str | None) -> list[tuple[str, types.Tool, Drift]]:
        """The new verdicts (blocking store calls: run off the event loop). An unchanged definition with no
        change pending is not looked up again; a blocked one always is (an approval may have come)."""
        up = self.connection.upstream
        out = []
        now = time.time()
        for name, served in self._served.items():
            if only is not None and name != only:
                continue
            remote = listed.get(name)
            if remote is None:
                if not served.missing:
                    log.warning("upstream %s no longer lists tool %s; calls to it still go to the upstream",
                                up.name, name)
                served.missing = True
                continue
            served.missing = False
            fingerprint = entry_of(remote).version
            if fingerprint == served.fingerprint and served.drift.action != "blocked":
                continue
            drift = check_tool(self.store, up.name, up.drift, remote, now,
                               announce=fingerprint != served.fingerprint)
            out.append((name, remote, drift))
        return out

    def _apply(self, name: str, remote: types.Tool, drift: Drift) -> Tool | None:
        served = self._served[name]
        shown_remote = served_remote(drift, remote)
        shown = entry_of(shown_remote).version
        served.listed, served.fingerprint, served.drift = remote, entry_of(remote).version, drift
        if shown == served.shown:
            return None
        log.info("upstream %s tool %s: serving %s (%s)", self.connection.upstream.name, name, shown, drift.action)
        served.shown = shown
        return self._build(shown_remote, served.local)
