"""A supervised connection to one upstream MCP server: started on first use, restarted when it dies.

The SDK's `Client` is an async context manager that must be entered and left in the same task, so one
owner task per connection holds it open; calls from any task use it. When the upstream process exits or
the stream breaks, the owner ends and the next call starts a fresh one. A call that times out triggers a
probe (`tools/list`): an upstream that does not answer it either is treated as hung and restarted.

Failures are raised as the contract sees them: not started -> `TransientUpstream` (nothing was sent, so
even a write is known not done); lost or timed out after sending -> `ConnectionError`/`TimeoutError`,
which the runner classifies as transient for reads and `outcome_unknown` for writes.

Two hooks serve the drift re-check (drift.py): `guard` is asked before every `tools/call` (and told when the
upstream refused one as invalid), and `on_tools_changed` is called when the upstream says its tool list
changed (`notifications/tools/list_changed` on handshake-era sessions, a `subscriptions/listen` stream on
2026-07-28 ones, opened only when a hook is set and the upstream advertises `tools.listChanged`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import anyio
import anyio.abc
import mcp_types as types
from mcp.client.client import Client
from mcp.client.session import IncomingMessage
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..contract._errors import InternalError, InvalidArgument, TransientUpstream
from ..contract._redaction import redact_text
from ._config import Upstream

log = logging.getLogger("toolproof.mcp")

PROBE_TIMEOUT_S: Final = 2.0
RELISTEN_S: Final = 1.0  # wait before re-opening a `subscriptions/listen` stream the upstream ended
_BROKEN: Final = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    ConnectionError,
    EOFError,
    OSError,
)


class CallGuard(Protocol):
    """Asked before every call on a connection (drift.py's `DriftWatch`): raise to refuse it unsent."""

    async def before_call(self, tool: str) -> None: ...

    async def refused(self, tool: str) -> None:
        """The upstream refused a call to `tool` as invalid: its definition may have changed."""
        ...


class UpstreamConnection:
    """One upstream server behind one long-lived MCP session (see the module docstring)."""

    def __init__(self, upstream: Upstream, *, connect_timeout_s: float = 30.0) -> None:
        self.upstream = upstream
        self.connect_timeout_s = connect_timeout_s
        self.starts = 0
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._probe: asyncio.Task[None] | None = None
        self._closed = False
        self.guard: CallGuard | None = None
        self.on_tools_changed: Callable[[], None] | None = None
        self._group: anyio.abc.TaskGroup | None = None  # the current session's, for the listen stream
        self._listening: Client | None = None

    # --- lifecycle -----------------------------------------------------------------------------------------

    def _target(self) -> StdioServerParameters | str:
        up = self.upstream
        if up.url is not None:
            return up.url
        return StdioServerParameters(command=up.command[0], args=list(up.command[1:]), env=dict(up.env) or None,
                                     cwd=up.cwd)

    async def _ensure(self) -> Client:
        probe = self._probe
        if probe is not None and not probe.done():
            # A call timed out: send nothing more until the probe says whether the upstream is hung.
            await asyncio.shield(probe)
        client = self._client
        if client is not None:
            return client
        if self._closed:
            raise TransientUpstream(
                f"upstream {self.upstream.name!r} is closed", code="UPSTREAM_CLOSED", effect_done=False
            )
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._client is None:
                await self._open()
            assert self._client is not None
            return self._client

    async def _open(self) -> None:
        stop = asyncio.Event()
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._own(stop, ready), name=f"toolproof-upstream-{self.upstream.name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            client = await asyncio.wait_for(asyncio.shield(ready), self.connect_timeout_s)
        except BaseException as exc:
            stop.set()
            if isinstance(exc, asyncio.CancelledError):
                raise
            detail = "did not answer in time" if isinstance(exc, TimeoutError) else _describe(exc)
            verb = "reached" if self.upstream.url is not None else "started"
            raise TransientUpstream(
                f"upstream {self.upstream.name!r} could not be {verb}: {detail}",
                code="UPSTREAM_UNAVAILABLE",
                hint="Do not change the arguments; the call was not sent. The orchestrator may retry.",
                effect_done=False,
            ) from None
        self.starts += 1
        self._client, self._stop = client, stop

    async def _own(self, stop: asyncio.Event, ready: asyncio.Future[Client]) -> None:
        """Hold one SDK session open until asked to stop or until it breaks by itself."""
        client: Client | None = None
        group: anyio.abc.TaskGroup | None = None
        try:
            async with (
                Client(self._target(), cache=None, message_handler=self._message) as client,
                anyio.create_task_group() as group,
            ):
                self._group = group
                if not ready.done():
                    ready.set_result(client)
                self._start_listening(client)
                await stop.wait()
                group.cancel_scope.cancel()
        except BaseException as exc:  # the session ended: the process died, the stream broke, or cancelled
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(str(exc)))
            elif not stop.is_set():
                log.warning("upstream %r connection ended: %s", self.upstream.name, _describe(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if client is not None and self._client is client:
                self._client = None
            if group is not None and self._group is group:
                self._group = None

    async def _message(self, message: IncomingMessage) -> None:
        """Handshake-era sessions: the upstream's `notifications/tools/list_changed`."""
        if isinstance(message, types.ToolListChangedNotification) and self.on_tools_changed is not None:
            self.on_tools_changed()

    def watch_changes(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever the upstream says its tool list changed (this session and later ones)."""
        self.on_tools_changed = callback
        if self._client is not None:
            self._start_listening(self._client)

    def _start_listening(self, client: Client) -> None:
        if self.on_tools_changed is None or self._listening is client or self._group is None:
            return
        tools = client.server_capabilities.tools
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS and tools is not None and tools.list_changed:
            self._listening = client
            self._group.start_soon(self._listen, client)

    async def _listen(self, client: Client) -> None:
        """2026-07-28 sessions: hold a `subscriptions/listen` stream for tool list changes, re-opened when it
        ends (nothing is replayed, so a re-opened stream counts as a change: the next check re-lists)."""
        wait = RELISTEN_S
        while True:
            try:
                async with client.listen(tools_list_changed=True) as events:
                    wait = RELISTEN_S
                    async for _event in events:
                        if self.on_tools_changed is not None:
                            self.on_tools_changed()
            except Exception as exc:  # the stream broke; the session may still be fine
                log.info("upstream %r: tool change stream ended: %s", self.upstream.name, _describe(exc))
            if self.on_tools_changed is not None:
                self.on_tools_changed()
            await anyio.sleep(wait)
            wait = min(wait * 2, 60.0)

    def _drop(self, client: Client) -> None:
        """Forget a broken or hung session; the next call starts a new one (stdio: a new process)."""
        if self._client is client:
            self._client = None
            if self._stop is not None:
                self._stop.set()

    def _suspect(self, client: Client) -> None:
        """After a timeout: probe in the background (a `tools/list`) and restart the upstream if it does not answer."""
        if self._closed or self._client is not client or (self._probe is not None and not self._probe.done()):
            return

        async def check() -> None:
            try:
                with anyio.fail_after(PROBE_TIMEOUT_S):
                    # `ping` is gone from the 2026-07-28 protocol; a listing works in every era.
                    await client.list_tools()
            except Exception:
                log.warning("upstream %r did not answer a probe after a timeout: restarting", self.upstream.name)
                self._drop(client)

        task = asyncio.get_running_loop().create_task(check())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._probe = task

    async def aclose(self) -> None:
        """Stop the session (and the stdio process) and wait for the owner task to end."""
        self._closed = True
        if self._stop is not None:
            self._stop.set()
        self._client = None
        tasks = list(self._tasks)
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=10)
            for task in pending:
                task.cancel()
            for task in pending:
                with contextlib.suppress(BaseException):
                    await task

    # --- requests ------------------------------------------------------------------------------------------

    async def list_tools(self) -> list[types.Tool]:
        """Every tool the upstream lists (all pages)."""
        client = await self._ensure()
        tools: list[types.Tool] = []
        cursor: str | None = None
        try:
            for _ in range(1000):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._drop(client)
                raise ConnectionError(f"upstream {self.upstream.name!r} closed the connection") from None
            raise
        except _BROKEN as exc:
            self._drop(client)
            raise ConnectionError(f"upstream {self.upstream.name!r}: {_describe(exc)}") from None
        return tools

    async def check_call(self, name: str) -> None:
        """What runs before a call is sent: the guard's check, on a started session (a restarted upstream is
        re-listed before anything reaches it)."""
        if self.guard is not None:
            await self._ensure()
            await self.guard.before_call(name)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        timeout_s: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> types.CallToolResult:
        """Send one `tools/call`; transport trouble is raised as described in the module docstring."""
        guard = self.guard
        if guard is not None:  # `check_call`, inline (once per call)
            await self._ensure()
            await guard.before_call(name)
        client = await self._ensure()
        # `session.send_request`, not `Client.call_tool`: the result is checked against the upstream's
        # `outputSchema` by the tool itself (jsonschema-rs), so the SDK's second, slower check is skipped. The
        # arguments are not copied here: the request's validation builds its own dict.
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name=name, arguments=arguments, _meta=meta or None)  # type: ignore[arg-type]
        )
        try:
            if timeout_s is None:  # bounded by the caller (the runner, for an imported tool)
                return await client.session.send_request(request, types.CallToolResult)
            async with asyncio.timeout(timeout_s):
                return await client.session.send_request(request, types.CallToolResult)
        except (TimeoutError, asyncio.CancelledError):
            self._suspect(client)
            raise
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._drop(client)
                raise ConnectionError(f"upstream {self.upstream.name!r} closed the connection") from None
            if exc.code == types.REQUEST_TIMEOUT:
                self._suspect(client)
                raise TimeoutError(f"upstream {self.upstream.name!r} timed out") from None
            if exc.code == types.INVALID_PARAMS and guard is not None:
                await guard.refused(name)  # a changed definition answers for itself (nothing was done)
            raise protocol_error(self.upstream.name, name, exc) from None
        except ValidationError:
            raise InternalError(
                f"{self.upstream.name}/{name}: the upstream answered with something that is not a tool result",
                code="UPSTREAM_PROTOCOL_ERROR",
                hint="Do not call again; tell a person. The upstream server misbehaved.",
            ) from None
        except _BROKEN as exc:
            self._drop(client)
            raise ConnectionError(f"upstream {self.upstream.name!r}: {_describe(exc)}") from None
        except BaseExceptionGroup as group:
            self._drop(client)
            raise ConnectionError(f"upstream {self.upstream.name!r}: {_describe(group)}") from None


def protocol_error(upstream: str, tool: str, exc: MCPError) -> InvalidArgument | InternalError:
    """A JSON-RPC error from the upstream (the request was refused before the tool ran)."""
    message = f"{upstream}/{tool}: the upstream refused the request: {exc.message}"
    if exc.code == types.INVALID_PARAMS:
        return InvalidArgument(message, code="UPSTREAM_INVALID_PARAMS",
                               hint="Correct the arguments as the message says and call again once.")
    return InternalError(message, code="UPSTREAM_PROTOCOL_ERROR",
                         hint="Do not call again; tell a person. The upstream server misbehaved.")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""  # shown to the model and logged:
    return f"{type(exc).__name__}: {redact_text(text)}"[:300] if text else type(exc).__name__  # scrubbed
