"""The gateway: one MCP server in front of several upstream MCP servers, with the whole contract between.

Every upstream tool is imported (validated against its own schema, trust applied, errors classified),
named by the naming policy, and served through one `Runner`, so the journal, the audit trail and the
per-upstream breakers (keyed on `Tool.upstream`) apply to every call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel.server import Server

from ..catalog._toolset import Toolset
from ..contract._errors import ErrorClass
from ..contract._tool import Effect, Tool
from ..orchestration.policy import RetryPolicy, decide_retry
from ..pipeline._runner import Runner
from ..stores import Store, open_store
from . import _health as health
from . import _reload as reload
from ._client import ImportedToolset, build_pinned_tools, load_upstream, watch_pins
from ._config import ConfigError, GatewayConfig
from ._connection import UpstreamConnection
from ._drift import Drift, DriftWatch
from ._limits import Limiter, unmatched_tools
from ._listing import clean_listing
from ._metrics import GatewayMetrics, Snapshot
from ._ops import GatewayRunner
from ._reload import Generation, generation
from ._server import LiveTools, create_server, serve_http, serve_stdio
from ._trust import Source, derive_policy


@dataclass(frozen=True, slots=True)
class Treatment:
    """How the gateway treats one upstream tool, and why: the table `toolproof gateway` prints at start.

    `journaled`: a write; a repeat with the same arguments in the same conversation is answered from the
    journal (`meta.replayed_from`), so an untrusted read gives the first answer again, not a fresh one.
    `retried`: a transient failure is retried automatically (reads and idempotent low-risk writes only).
    `neutralised`: the places of an untrusted upstream's listing served neutralised or cut, or left as sent
    though poisoned (listing.py), one `where (what)` each; empty when the listing was clean."""

    tool: str
    upstream: str
    remote: str
    trusted: bool
    effect: Effect
    idempotent: bool
    journaled: bool
    retried: bool
    source: Source
    neutralised: tuple[str, ...] = ()


def treatment(conn: UpstreamConnection, remote: types.Tool, tool_name: str, runner: Runner) -> Treatment:
    """The treatment of one upstream tool, from the same trust rule and retry rule the calls go through."""
    up = conn.upstream
    policy = derive_policy(remote.annotations, trusted=up.trusted, override=up.override_for(remote.name),
                           default_timeout_s=up.timeout_s)
    tool = runner.toolset.get(tool_name)
    cleaned = () if up.trusted else tuple(str(n) for n in clean_listing(remote)[1])
    return Treatment(tool_name, up.name, remote.name, up.trusted, tool.effect, tool.idempotent,
                     journaled=tool.effect == "write", retried=retries_transient(runner.retry, tool),
                     source=policy.source, neutralised=cleaned)


def retries_transient(policy: RetryPolicy, tool: Tool) -> bool:
    """Whether a first transient failure of this tool would be retried (asked of `decide_retry` itself)."""
    return decide_retry(policy, error_class=ErrorClass.TRANSIENT_UPSTREAM, attempts=1, now=0.0, effect=tool.effect,
                        idempotent=tool.idempotent, risk=tool.risk).retry

if TYPE_CHECKING:
    from ._auth import HttpAuth

log = logging.getLogger("toolproof.mcp.gateway")


class Gateway:
    """Start with `await gateway.start()` (or `async with Gateway(config) as gw`), then serve or call.

    `start()` connects to every upstream at once and fails with a clear message when one cannot be started,
    lists no tools the config names, or leaves a name clash. `metrics` is this gateway's own Prometheus
    registry; `await reload(config)` applies a new config while serving (reload.py).
    """

    def __init__(self, config: GatewayConfig, *, store: Store | str | None = None, **runner_options: Any) -> None:
        self.config = config
        self._store = store if store is not None else config.store
        self._runner_options = runner_options
        self.connections = tuple(UpstreamConnection(up) for up in config.upstreams)
        self._runner: Runner | None = None
        self._remotes: list[tuple[UpstreamConnection, types.Tool, str]] = []  # (upstream, its tool, our name)
        self.drifts: tuple[Drift, ...] = ()  # what the drift check found at start, one per served tool
        self.watches: tuple[DriftWatch, ...] = ()  # the drift re-check while running, one per upstream
        self.live = LiveTools(self._recheck)
        self.metrics = GatewayMetrics(self.snapshot)
        self._reload_lock = asyncio.Lock()
        self._retiring: dict[asyncio.Task[None], tuple[UpstreamConnection, ...]] = {}

    @property
    def runner(self) -> Runner:
        """The runner that serves calls (after `start()`)."""
        if self._runner is None:
            raise RuntimeError("the gateway is not started: await gateway.start() first")
        return self._runner

    @property
    def toolset(self) -> Toolset:
        return self.runner.toolset

    async def start(self) -> Toolset:
        # The store first: a bad store URL fails before any upstream process is started.
        store = self._store if isinstance(self._store, Store) else open_store(self._store)
        try:
            loaded = await asyncio.gather(*(load_upstream(c) for c in self.connections))
            pairs = list(zip(self.connections, loaded, strict=True))
            tools, self.drifts = await asyncio.to_thread(build_pinned_tools, pairs, self.config.naming, store)
            toolset = ImportedToolset(tools, ())
            options = {"shared_state": self.config.shared_state, **self._runner_options}
            runner = GatewayRunner(toolset, store=store, caps=self.config.caps, metrics=self.metrics, **options)
            self._runner = runner
            runner.limiter = Limiter(self.config.limits, shared=runner.shared_state.rate_limits())
            health.warn_unmatched(unmatched_tools(self.config.limits, {t.name: t.upstream or "" for t in tools}))
            self.adopt(generation(pairs, tools, self.drifts, watch_pins(pairs, tools, self.drifts, store,
                                                                        self.replace_tools)))
        except BaseException:
            await self.aclose()
            if self._runner is None:
                store.close()
            raise
        return toolset

    @property
    def started(self) -> bool:
        """Whether `start()` has made the runner (and not `aclose()` dropped it)."""
        return self._runner is not None

    def adopt(self, generation: Generation) -> None:
        """Serve from `generation` from now on (start, or a reload that built a new one)."""
        self.connections, self.drifts, self.watches = generation.connections, generation.drifts, generation.watches
        self._remotes = list(generation.remotes)

    async def replace_tools(self, tools: Sequence[Tool]) -> None:
        """A re-check changed what some tools serve: swap them in and tell clients to list again."""
        toolset = self.runner.toolset
        assert isinstance(toolset, ImportedToolset)
        if toolset.replace_tools(tools):
            await self.live.changed()

    async def _recheck(self) -> None:
        """Before a client's `tools/list`: re-list the upstreams whose last listing is past their interval."""
        due = [w for w in self.watches if w.due()]
        results = await asyncio.gather(*(w.check() for w in due), return_exceptions=True)
        for watch, result in zip(due, results, strict=True):
            if isinstance(result, Exception):  # the listing is served as last checked; calls re-check again
                log.warning("upstream %s: drift re-check failed: %s", watch.connection.upstream.name, result)

    def treatments(self) -> list[Treatment]:
        """How every upstream tool is treated (trusted, effect, journaled, retried), in upstream order."""
        return [treatment(conn, remote, name, self.runner) for conn, remote, name in self._remotes]

    def snapshot(self) -> Snapshot:
        """The state `/metrics` reports (blocking: it reads the store)."""
        return health.snapshot(self)

    async def ready(self) -> tuple[bool, dict[str, Any]]:
        """Whether every upstream and the store answer now, and what each said (`/readyz`)."""
        return await health.readiness(self)

    async def reload(self, config: GatewayConfig) -> list[str]:
        """Apply a new config to the running gateway, sessions open (reload.py): what changed, one line each.
        Raises (`ConfigError`, or what starting a new upstream raised) with nothing applied when it cannot."""
        runner = self.runner
        try:
            if not isinstance(runner, GatewayRunner):
                raise ConfigError("this gateway's runner takes no reload")
            async with self._reload_lock:
                changes = await reload.apply(self, runner, config)
        except Exception:
            self.metrics.reloaded(False)
            raise
        self.metrics.reloaded(True)
        return changes

    def retire(self, connections: Sequence[UpstreamConnection], grace_s: float) -> None:
        """Close upstreams a reload removed, once their calls in flight have had `grace_s` to end."""
        async def close() -> None:
            await asyncio.sleep(grace_s)
            await asyncio.gather(*(c.aclose() for c in connections), return_exceptions=True)

        task = asyncio.get_running_loop().create_task(close(), name="toolproof-gateway-retire")
        self._retiring[task] = tuple(connections)
        task.add_done_callback(lambda t: self._retiring.pop(t, None))

    def create_server(self) -> Server[Any]:
        return create_server(self.runner, name=self.config.name, live=self.live)

    async def serve_stdio(self) -> None:
        await serve_stdio(self.runner, name=self.config.name, live=self.live)

    async def serve_http(
        self, *, host: str = "127.0.0.1", port: int = 8000, auth: HttpAuth | None = None,
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        """Streamable HTTP; a non-loopback `host` needs `auth` (see `serve_http`). `/healthz`, `/readyz`
        and `/metrics` are served beside `/mcp` (health.py)."""
        await serve_http(self.runner, host=host, port=port, name=self.config.name, auth=auth,
                         allowed_hosts=allowed_hosts, live=self.live, routes=health.routes(self))

    async def aclose(self) -> None:
        for watch in self.watches:
            watch.close()
        retiring: list[UpstreamConnection] = []
        for task, conns in list(self._retiring.items()):  # retired by a reload, not closed yet: now
            task.cancel()
            retiring.extend(conns)
        await asyncio.gather(*(c.aclose() for c in (*self.connections, *retiring)), return_exceptions=True)
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
