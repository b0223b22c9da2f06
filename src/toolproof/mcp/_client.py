"""Import the tools of a remote MCP server as schema-first toolproof tools that run through the Runner.

Each imported tool validates arguments against the upstream's own `inputSchema` before anything is sent
(bad arguments never reach the upstream), forwards the call over one supervised session, and turns what
comes back into a value or a classified `ToolError` (see `results.py`). Effect and idempotency follow the
trust rules in `trust.py`; `Tool.upstream` names the server, so breakers work per upstream.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import mcp_types as types

from ..catalog._toolset import Toolset, mcp_definition
from ..contract._context import CallContext
from ..contract._errors import DefinitionError
from ..contract._tool import Tool
from ..stores import Store
from ._caps import cap_response
from ._config import DEFAULT_TIMEOUT_S, NamingPolicy, ToolOverride, Upstream
from ._connection import UpstreamConnection
from ._drift import Drift, DriftWatch, check_tool, served_remote
from ._errormap import DEFAULT_ERROR_MAPPING, ErrorMapping
from ._listing import clean_listing
from ._naming import Origin, assign_names
from ._results import interpret, unwrap_output_schema
from ._server import META_CONVERSATION_ID, META_OCCURRENCE, META_PRINCIPAL, META_RUN_ID
from ._trust import derive_policy

#: The idempotency key the runner assigned, forwarded so an upstream that understands it can enforce it.
META_IDEMPOTENCY_KEY = "dev.toolproof/idempotency_key"


class ImportedToolset(Toolset):
    """A `Toolset` whose tools call remote MCP servers; close it (or use `async with`) to stop them.

    With pins, its tools follow their upstream's definitions while it runs (`watches`, drift.py): the one
    kind of toolset whose tools are replaced in place, so a `Runner` built on it serves the new ones."""

    __slots__ = ("connections", "watches")

    def __init__(self, tools: Sequence[Tool], connections: Sequence[UpstreamConnection]) -> None:
        super().__init__(tools)
        self.connections = tuple(connections)
        self.watches: tuple[DriftWatch, ...] = ()

    def replace_tools(self, tools: Sequence[Tool]) -> bool:
        """Swap in new versions of tools already here (same names, same order); True when a definition the
        model sees changed (then clients should re-list)."""
        by_name = dict(self._by_name)
        changed = False
        for tool in tools:
            old = by_name.get(tool.name)
            if old is None:
                raise KeyError(f"no tool {tool.name!r} to replace")
            changed = changed or mcp_definition(old) != mcp_definition(tool)
            by_name[tool.name] = tool
        self._tools = tuple(by_name[t.name] for t in self._tools)
        self._by_name = by_name
        self._indexes = {}
        return changed

    async def aclose(self) -> None:
        for watch in self.watches:
            watch.close()
        for conn in self.connections:
            await conn.aclose()

    async def __aenter__(self) -> ImportedToolset:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def close_open_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`additionalProperties: false` at the top level when properties are declared and extras unspecified."""
    out = copy.deepcopy(dict(schema))
    out.setdefault("type", "object")
    if isinstance(out.get("properties"), Mapping) and out["properties"] and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def _context_meta(context: CallContext) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key, value in (
        (META_CONVERSATION_ID, context.conversation_id),
        (META_PRINCIPAL, context.principal),
        (META_RUN_ID, context.run_id),
        (META_IDEMPOTENCY_KEY, context.idempotency_key),
    ):
        if value is not None:
            meta[key] = value
    if context.occurrence:
        meta[META_OCCURRENCE] = context.occurrence
    return meta


def build_tool(
    connection: UpstreamConnection,
    remote: types.Tool,
    local_name: str,
    *,
    errors: ErrorMapping | None = None,
) -> Tool:
    """One upstream tool as a schema-first `Tool` named `local_name` (trust and overrides applied). An
    untrusted upstream's words are served neutralised and capped (listing.py), as its results are."""
    up = connection.upstream
    if not up.trusted:
        remote = clean_listing(remote)[0]
    policy = derive_policy(
        remote.annotations,
        trusted=up.trusted,
        override=up.override_for(remote.name),
        default_timeout_s=up.timeout_s,
    )
    schema = close_open_schema(remote.input_schema) if up.close_open_schemas else dict(remote.input_schema)
    mapping = errors or up.errors
    remote_name = remote.name
    shown = f"{up.name}/{remote_name}"
    timeout_s = policy.timeout_s
    trusted = up.trusted
    structured = unwrap_output_schema(remote.output_schema) is not None

    async def handler(arguments: dict[str, Any], context: CallContext) -> Any:
        # No time limit of its own: the runner bounds every attempt at the tool's `timeout_s` (this one) and
        # cancels it there, which `call_tool` takes as a timeout (the upstream is probed, restarted if hung).
        result = await connection.call_tool(remote_name, arguments, meta=_context_meta(context))
        # Cut before anything reads it (the caps of the upstream as it is now: a reload may change them).
        result = cap_response(result, connection.upstream.caps, upstream=up.name, tool=local_name,
                              structured_required=structured)
        return interpret(result, mapping, tool=shown, trusted=trusted)

    annotations = remote.annotations
    try:
        return Tool.from_schema(
            local_name,
            remote.description or "",
            schema,
            handler,
            effect=policy.effect,
            idempotent=policy.idempotent,
            risk=policy.risk,
            timeout_s=timeout_s,
            output_schema=unwrap_output_schema(remote.output_schema),
            upstream=up.name,
            open_world=bool(annotations is not None and annotations.open_world_hint),
            title=remote.title or (annotations.title if annotations is not None else None),
            group=up.name,
        )
    except DefinitionError as exc:
        raise DefinitionError(f"upstream {up.name!r}, tool {remote_name!r}: {exc}") from None


async def load_upstream(connection: UpstreamConnection) -> list[types.Tool]:
    """The upstream's tools, minus the excluded ones, with a clear error for overrides naming no tool."""
    up = connection.upstream
    listed = await connection.list_tools()
    names = {t.name for t in listed}
    unknown = sorted((set(up.tools) | set(up.exclude)) - names)
    if unknown:
        raise DefinitionError(
            f"upstream {up.name!r} has no tool(s) {', '.join(map(repr, unknown))} named in its config; "
            f"it lists: {', '.join(sorted(names)) or '(none)'}"
        )
    return [t for t in listed if t.name not in up.exclude]


def build_tools(
    loaded: Sequence[tuple[UpstreamConnection, Sequence[types.Tool]]], naming: NamingPolicy
) -> list[Tool]:
    """Name and build the tools of several upstreams (a clash that remains raises `NameClash`)."""
    origins: list[tuple[Origin, UpstreamConnection, types.Tool]] = []
    for conn, remotes in loaded:
        for remote in remotes:
            override = conn.upstream.override_for(remote.name)
            rename = override.rename if override is not None else None
            origins.append((Origin(conn.upstream.name, remote.name, rename), conn, remote))
    names = assign_names([o for o, _, _ in origins], naming)
    return [build_tool(conn, remote, names[origin]) for origin, conn, remote in origins]


def build_pinned_tools(
    loaded: Sequence[tuple[UpstreamConnection, Sequence[types.Tool]]], naming: NamingPolicy, store: Store
) -> tuple[list[Tool], tuple[Drift, ...]]:
    """`build_tools` with every tool checked against its pin first (drift.py): a blocked change is built from
    the pinned definition; `watch_pins` then makes its calls refuse. Blocking store calls: run it off the
    event loop."""
    now = time.time()
    drifts = [[check_tool(store, c.upstream.name, c.upstream.drift, r, now) for r in remotes]
              for c, remotes in loaded]
    served = [(c, [served_remote(d, r) for d, r in zip(ds, rs, strict=True)])
              for ds, (c, rs) in zip(drifts, loaded, strict=True)]
    return build_tools(served, naming), tuple(d for ds in drifts for d in ds)


def watch_pins(
    loaded: Sequence[tuple[UpstreamConnection, Sequence[types.Tool]]],
    tools: Sequence[Tool],
    drifts: Sequence[Drift],
    store: Store,
    replace: Callable[[Sequence[Tool]], Awaitable[None]],
) -> tuple[DriftWatch, ...]:
    """One installed `DriftWatch` per upstream, from what `build_pinned_tools` found at start (same order)."""
    watches = []
    at = 0
    for conn, remotes in loaded:
        served = [(tools[at + i].name, remote, drifts[at + i]) for i, remote in enumerate(remotes)]
        at += len(remotes)

        def build(remote: types.Tool, local: str, conn: UpstreamConnection = conn) -> Tool:
            return build_tool(conn, remote, local)

        watches.append(DriftWatch(conn, store, served, build=build, replace=replace).install())
    return tuple(watches)


async def import_tools(
    source: str | Sequence[str] | Upstream,
    *,
    name: str = "upstream",
    trusted: bool = False,
    tools: Mapping[str, ToolOverride] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    errors: ErrorMapping = DEFAULT_ERROR_MAPPING,
    prefix: bool = False,
    pins: Store | None = None,
    drift: str | None = None,
    drift_recheck_s: float | None = None,
) -> ImportedToolset:
    """Connect to an MCP server and return its tools as a `Toolset` that runs through a `Runner`.

    `source` is a URL (`http(s)://...`, streamable HTTP), a command line (a string or an argv list: stdio),
    or a full `Upstream` (then `trusted=True` and `tools` are added to its own). Untrusted by default:
    every tool is a non-idempotent write unless `tools` overrides say otherwise. `prefix=True` names
    tools `NAME__tool`. With `pins` (a store), every tool is checked against its pin there and a change is
    handled by `drift` (`accept-compatible` by default, `block`, `warn`: see drift.py), as in the gateway:
    at import, and again before a call once the last listing is older than `drift_recheck_s` (default 5 s) or
    the server announced a change; a changed tool is replaced in the returned toolset.
    Close the result with `aclose()` or use it as `async with`.
    """
    if isinstance(source, Upstream):
        upstream = replace(source, trusted=source.trusted or trusted, tools={**source.tools, **(tools or {})})
    elif isinstance(source, str) and source.startswith(("http://", "https://")):
        upstream = Upstream(name=name, url=source, trusted=trusted, tools=tools or {}, timeout_s=timeout_s,
                            errors=errors)
    else:
        upstream = Upstream(name=name, command=source if isinstance(source, str) else tuple(source),  # type: ignore[arg-type]
                            env=env or {}, cwd=cwd, trusted=trusted, tools=tools or {}, timeout_s=timeout_s,
                            errors=errors)
    if drift is not None:
        upstream = replace(upstream, drift=drift)
    if drift_recheck_s is not None:
        upstream = replace(upstream, drift_recheck_s=drift_recheck_s)
    connection = UpstreamConnection(upstream)
    naming = NamingPolicy(prefix="always" if prefix else "on_clash")
    try:
        remotes = await load_upstream(connection)
        if pins is None:
            return ImportedToolset(build_tools([(connection, remotes)], naming), [connection])
        store = pins
        loaded = [(connection, remotes)]
        built, drifts = await asyncio.to_thread(lambda: build_pinned_tools(loaded, naming, store))
        toolset = ImportedToolset(built, [connection])

        async def replace_tools(tools: Sequence[Tool]) -> None:
            toolset.replace_tools(tools)

        toolset.watches = watch_pins(loaded, built, drifts, store, replace_tools)
        return toolset
    except BaseException:
        await connection.aclose()
        raise
