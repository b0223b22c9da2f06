"""The gateway: one MCP server in front of several upstream MCP servers, with the whole contract between.

Every upstream tool is imported (validated against its own schema, trust applied, errors classified),
named by the naming policy, and served through one `Runner`, so the journal, the audit trail and the
per-upstream breakers (keyed on `Tool.upstream`) apply to every call.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server.lowlevel.server import Server

from ..catalog.toolset import Toolset
from ..pipeline.runner import Runner
from ..stores import Store, open_store
from .client import build_pinned_tools, load_upstream
from .config import GatewayConfig
from .connection import UpstreamConnection
from .drift import Drift
from .server import create_server, serve_http, serve_stdio


class Gateway:
    """Start with `await gateway.start()` (or `async with Gateway(config) as gw`), then serve or call.

    `start()` connects to every upstream at once and fails with a clear message when one cannot be started,
    lists no tools the config names, or leaves a name clash.
    """

    def __init__(self, config: GatewayConfig, *, store: Store | str | None = None, **runner_options: Any) -> None:
        self.config = config
        self._store = store if store is not None else config.store
        self._runner_options = runner_options
        self.connections = tuple(UpstreamConnection(up) for up in config.upstreams)
        self._runner: Runner | None = None
        self.drifts: tuple[Drift, ...] = ()  # what the drift check found at start, one per served tool

    @property
    def runner(self) -> Runner:
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
            toolset = Toolset(tools)
            self._runner = Runner(toolset, store=store, **self._runner_options)
        except BaseException:
            await self.aclose()
            if self._runner is None:
                store.close()
            raise
        return toolset

    def create_server(self) -> Server[Any]:
        return create_server(self.runner, name=self.config.name)

    async def serve_stdio(self) -> None:
        await serve_stdio(self.runner, name=self.config.name)

    async def serve_http(self, *, host: str = "127.0.0.1", port: int = 8000) -> None:
        await serve_http(self.runner, host=host, port=port, name=self.config.name)

    async def aclose(self) -> None:
        await asyncio.gather(*(c.aclose() for c in self.connections), return_exceptions=True)
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
