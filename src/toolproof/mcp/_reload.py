"""A new config applied to a running gateway, with its sessions open: caps and limits swap in place; added or
changed upstreams are started and listed first, and only when everything loads (no clash, no missing tool)
does the toolset swap; a removed or replaced upstream is closed once its calls in flight have had time to end.

Whatever fails before the swap leaves the running gateway as it was (the new connections are closed). What
cannot change while serving (the store, the shared state, the server name) refuses the reload.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import mcp_types as types

from ..contract._tool import Tool
from ._caps import DEFAULT_CAPS
from ._client import ImportedToolset, build_pinned_tools, load_upstream, watch_pins
from ._config import ConfigError, GatewayConfig, Upstream
from ._connection import UpstreamConnection
from ._drift import Drift, DriftWatch
from ._health import summarize
from ._limits import Limiter, unmatched_tools

if TYPE_CHECKING:

    from ._gateway import Gateway
    from ._ops import GatewayRunner

log: Final = logging.getLogger("toolproof.gateway")

#: What a reload cannot change (each needs a restart).
RESTART_ONLY: Final = ("store", "shared_state", "name")


def _plain(up: Upstream) -> Upstream:
    return dataclasses.replace(up, caps=DEFAULT_CAPS)


def generation(pairs: Sequence[tuple[UpstreamConnection, Sequence[types.Tool]]], tools: Sequence[Tool],
               drifts: tuple[Drift, ...], watches: tuple[DriftWatch, ...]) -> Generation:
    """The generation of these upstreams' listings and the tools built from them (in the same order)."""
    remotes = [(conn, remote) for conn, listed in pairs for remote in listed]
    return Generation(tuple(conn for conn, _ in pairs), drifts, watches,
                      tuple((conn, remote, t.name) for (conn, remote), t in zip(remotes, tools, strict=True)))


@dataclass(frozen=True, slots=True)
class Generation:
    """What a gateway serves from, swapped in whole by a reload: its upstream connections, the drift check of
    each served tool, the re-check watches, and each served tool's upstream and upstream tool (in order)."""

    connections: tuple[UpstreamConnection, ...]
    drifts: tuple[Drift, ...]
    watches: tuple[DriftWatch, ...]
    remotes: tuple[tuple[UpstreamConnection, types.Tool, str], ...]  # (upstream, its tool, our name)


def restart_only(old: GatewayConfig, new: GatewayConfig) -> list[str]:
    return [f"[gateway] {key}" for key in RESTART_ONLY if getattr(old, key) != getattr(new, key)]


async def apply(gw: Gateway, runner: GatewayRunner, config: GatewayConfig) -> list[str]:
    """Apply `config` to the running gateway (see the module docstring); what changed, one line each."""
    fixed = restart_only(gw.config, config)
    if fixed:
        raise ConfigError(f"{', '.join(fixed)} changed: that needs a restart (the rest of the config can change "
                          "on reload)")
    limiter = Limiter(config.limits, shared=runner.shared_state.rate_limits())
    changes = summarize(gw.config, config)
    old = {c.upstream.name: c for c in gw.connections}
    upstreams_changed = config.naming != gw.config.naming or [_plain(u) for u in config.upstreams] != [
        _plain(c.upstream) for c in gw.connections]
    if upstreams_changed:
        changes += await _swap_upstreams(gw, runner, config, old)
    else:
        for conn in gw.connections:
            conn.upstream = dataclasses.replace(conn.upstream, caps=config.caps)
    limiter.keep_buckets(runner.limiter)
    runner.limiter, runner.caps = limiter, config.caps
    gw.config = config
    for name in unmatched_tools(config.limits, {t.name: t.upstream or "" for t in runner.toolset}):
        log.warning("[[limits]] %r picks none of the served tools; it limits nothing", name)
    return changes


async def _swap_upstreams(gw: Gateway, runner: GatewayRunner, config: GatewayConfig,
                          old: dict[str, UpstreamConnection]) -> list[str]:
    conns: list[UpstreamConnection] = []
    fresh: list[UpstreamConnection] = []
    for up in config.upstreams:
        kept = old.get(up.name)
        if kept is not None and _plain(kept.upstream) == _plain(up):
            conns.append(kept)
        else:
            conn = UpstreamConnection(up)
            conns.append(conn)
            fresh.append(conn)
    try:
        # Every upstream listed now (kept ones too: what they serve may have moved on since the start).
        loaded = await asyncio.gather(*(load_upstream(c) for c in conns))
        pairs = [(c, list(t)) for c, t in zip(conns, loaded, strict=True)]
        by_conn = {id(c) for c in fresh}
        # A kept connection's tools are rebuilt with its new caps; nothing of it is swapped before the end.
        kept_caps = {id(c): c.upstream for c in conns if id(c) not in by_conn}
        for c in conns:
            if id(c) in kept_caps:
                c.upstream = dataclasses.replace(c.upstream, caps=config.caps)
        try:
            tools, drifts = await asyncio.to_thread(build_pinned_tools, pairs, config.naming, runner.store)
            toolset = ImportedToolset(tools, ())
        except BaseException:
            for c in conns:
                if id(c) in kept_caps:
                    c.upstream = kept_caps[id(c)]
            raise
    except BaseException:
        await asyncio.gather(*(c.aclose() for c in fresh), return_exceptions=True)
        raise
    before = set(runner.toolset.names)
    for watch in gw.watches:
        watch.close()
    runner.toolset = toolset
    gw.adopt(generation(pairs, tools, drifts, watch_pins(pairs, tools, drifts, runner.store, gw.replace_tools)))
    retired = [c for c in old.values() if c not in conns]
    if retired:
        grace = max((c.upstream.timeout_s for c in retired), default=0.0) + 5.0
        gw.retire(retired, grace)
    after = set(toolset.names)
    await gw.live.changed()  # clients list again (notifications/tools/list_changed, or a listen event)
    names = [u.name for u in config.upstreams]
    out = [f"upstreams: {', '.join(names)} ({len(fresh)} started, {len(retired)} retired)"]
    if after != before:
        added, removed = sorted(after - before), sorted(before - after)
        out.append(f"tools: {len(after)} (added: {', '.join(added) or 'none'}; "
                   f"removed: {', '.join(removed) or 'none'})")
    return out
