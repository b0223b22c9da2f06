"""Chaos on an MCP server (`stdio:CMD`, or a streamable HTTP URL), through the official MCP client SDK, the
server as it is.

Only the transport can be broken from outside, so the scenarios are the caller's: a reply dropped and the
call resent on the same session; the server process killed (SIGKILL) after it answered and the call resent
to a new one (stdio only: a URL's server is not this run's to kill); two calls racing on one session; other
arguments; the call re-issued on a new session. The effects are counted by a read tool the user names
(`count_with`: its answer holds one number, read before and after the calls on each session), else they are
not observable; what the caller was told always is. A fault inside the tool's body (a timeout after the
commit, a 429) needs a toolset target.
"""

from __future__ import annotations

import os
import shlex
import signal
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ..contract._envelope import Envelope, MalformedEnvelope
from ..mcp._server import META_CONVERSATION_ID, META_PRINCIPAL
from ._arguments import arguments_for, changed
from ._callers import Reply
from ._run import DEFAULT_PRINCIPAL, NO_CHANGE, NotApplicable, Row
from ._scenarios import SCENARIOS, Scenario

__all__ = ["ServerCall", "ServerError", "ServerRun", "guarded", "parse_command", "run_server_chaos", "write_tools_of"]

NOT_STAGED: Final = "not staged on a server: the fault is inside the tool's body (give a MODULE:TOOLSET target)"
NO_VERIFY_OVER_MCP: Final = "not observable (a server's body cannot be staged, nor its verify hook asked, over MCP)"
_SERVER_SCENARIOS: Final = frozenset({"reply_lost", "worker_killed", "racing_resends", "changed_arguments",
                                      "new_request_id"})
_TIMEOUT_S: Final = 60.0
_T = TypeVar("_T")


class ServerError(Exception):
    """The server could not be started, listed or counted with: one line saying why."""


@dataclass
class _Server:
    session: ClientSession
    pid: int | None
    #: What the server announced under `capabilities.extensions` when the session began.
    extensions: dict[str, dict[str, Any]]


def write_tools_of(tools: Sequence[types.Tool]) -> list[types.Tool]:
    """The tools not declared read-only (`readOnlyHint`)."""
    return [t for t in tools if not (t.annotations is not None and t.annotations.read_only_hint)]


def run_server_chaos(
    command: str,
    *,
    tools: Sequence[str] = (),
    arguments: Mapping[str, dict[str, Any]] | None = None,
    count_with: str | None = None,
    scenarios: Sequence[Scenario] = SCENARIOS,
    principal: str = DEFAULT_PRINCIPAL,
) -> list[Row]:
    run = ServerRun(parse_command(command), dict(arguments or {}), count_with, principal)
    return guarded(command, lambda: anyio.run(run.all, tools, scenarios))


def parse_command(command: str) -> list[str]:
    """A URL as it is, else the stdio command line split as a shell would."""
    argv = [command] if command.startswith(("http://", "https://")) else shlex.split(command)
    if not argv:
        raise ServerError("stdio: needs a command")
    return argv


def guarded(command: str, work: Callable[[], _T]) -> _T:
    """`work()`, with whatever the session raised (out of its task groups) as one `ServerError` line."""
    try:
        return work()
    except ServerError:
        raise
    except Exception as exc:
        cause: BaseException = exc
        while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
            cause = cause.exceptions[0]
        raise ServerError(f"MCP server {command!r}: {type(cause).__name__}: {cause}") from None


class ServerRun:
    def __init__(self, argv: list[str], given: dict[str, dict[str, Any]], count_with: str | None,
                 principal: str) -> None:
        self.argv, self.given, self.count_with, self.principal = argv, given, count_with, principal
        self.http = argv[0].startswith(("http://", "https://"))

    async def listing(self, names: Sequence[str]) -> tuple[list[types.Tool], dict[str, dict[str, Any]]]:
        """The write tools chaos works on (or the ones named), and the extensions the server announced."""
        async with self.connect() as server:
            listed = (await server.session.list_tools()).tools
            extensions = server.extensions
        known = {t.name: t for t in listed}
        for name in [*names, *([self.count_with] if self.count_with else [])]:
            if name not in known:
                raise ServerError(f"the server has no tool {name!r}; it has: {', '.join(known)}")
        return ([known[n] for n in names] if names else write_tools_of(listed)), extensions

    async def all(self, names: Sequence[str], scenarios: Sequence[Scenario]) -> list[Row]:
        chosen, _ = await self.listing(names)
        rows: list[Row] = []
        for tool in chosen:
            args = arguments_for(tool.input_schema, (), self.given.get(tool.name))
            for sc in scenarios:
                rows.append(await self.one(sc, tool, args))
        return rows

    async def one(self, sc: Scenario, tool: types.Tool, args: dict[str, Any]) -> Row:
        counted = f"read tool {self.count_with}: its number after the calls minus before, per session" \
            if self.count_with else "not observable (no --count-with TOOL)"
        if sc.needs_verify:
            return Row(tool.name, sc.key, "server", None, None, 0, None, (), NO_VERIFY_OVER_MCP)
        if sc.key not in _SERVER_SCENARIOS:
            return Row(tool.name, sc.key, "server", None, None, 0, None, (), "not staged", note=NOT_STAGED)
        call = ServerCall(self, tool, args, f"chaos-{uuid.uuid4().hex[:12]}")
        try:
            replies, note = await _STAGINGS[sc.key](call)
        except NotApplicable as exc:
            return Row(tool.name, sc.key, "server", None, None, 0, None, (), "not applicable", note=str(exc))
        ok = [i for i, r in enumerate(replies, 1) if r.ok]
        effects = None if self.count_with is None else round(call.effects)
        return Row(tool.name, sc.key, "server", effects, None, len(replies), ok[0] if ok else None,
                   tuple(r.told for r in replies), counted, any(r.replayed for r in replies), note)

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[_Server]:
        """A session: over streamable HTTP for a URL, else with a server process of its own (stdio)."""
        if self.http:
            with anyio.fail_after(_TIMEOUT_S):
                async with streamable_http_client(self.argv[0]) as (read, write), ClientSession(read, write) as http:
                    started = await http.initialize()
                    yield _Server(http, None, dict(started.capabilities.extensions or {}))
            return
        before = _children()
        params = StdioServerParameters(command=self.argv[0], args=self.argv[1:], env=dict(os.environ))
        with anyio.fail_after(_TIMEOUT_S):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                started = await session.initialize()
                new = _children() - before
                yield _Server(session, next(iter(new)) if len(new) == 1 else None,
                              dict(started.capabilities.extensions or {}))


class ServerCall:
    """One scenario's calls: its conversation, and the effects counted on every session it opened."""

    def __init__(self, run: ServerRun, tool: types.Tool, args: dict[str, Any], conversation: str,
                 keys: tuple[str, str] = (META_CONVERSATION_ID, META_PRINCIPAL)) -> None:
        self.run, self.tool, self.args, self.conversation = run, tool, args, conversation
        self.keys = keys  # the `_meta` keys of the conversation and the principal
        self.effects = 0.0

    async def send(self, server: _Server, args: dict[str, Any] | None = None, *, conversation: str | None = None,
                   principal: str | None = None) -> Reply:
        meta: Any = {self.keys[0]: conversation or self.conversation, self.keys[1]: principal or self.run.principal}
        result = await server.session.call_tool(self.tool.name, self.args if args is None else args, meta=meta)
        return _reply(result)

    async def count(self, server: _Server) -> float:
        name = self.run.count_with
        if name is None:
            return 0.0
        result = await server.session.call_tool(name, self.run.given.get(name, {}))
        found = _number(result)
        if found is None:
            raise ServerError(f"--count-with {name}: its answer holds no number")
        return found

    @asynccontextmanager
    async def session(self) -> AsyncIterator[_Server]:
        """A session (a server process) whose effects are counted around what is done in it."""
        async with self.run.connect() as server:
            before = await self.count(server)
            yield server
            self.effects += await self.count(server) - before


async def _reply_lost(call: ServerCall) -> tuple[list[Reply], str]:
    async with call.session() as server:
        first = await call.send(server)
        second = await call.send(server)  # the same call again: a new JSON-RPC request id, the same session
    return [Reply.lost(f"reply dropped; it was {first.told}"), second], ""


async def _new_request_id(call: ServerCall) -> tuple[list[Reply], str]:
    async with call.session() as server:
        first = await call.send(server)
    async with call.session() as server:
        second = await call.send(server)
    return [Reply.lost(f"stream cut; it was {first.told}"), second], "re-issued on a new session"


async def _worker_killed(call: ServerCall) -> tuple[list[Reply], str]:
    if call.run.http:
        raise NotApplicable("a server at a URL is not this run's process to kill")
    killed: int | None = None
    try:
        async with call.run.connect() as server:
            before = await call.count(server)
            first = await call.send(server)
            call.effects += await call.count(server) - before  # read just before the kill
            if server.pid is None:
                raise NotApplicable("the server's process could not be found to kill")
            killed = server.pid
            os.kill(killed, signal.SIGKILL)
    except Exception:
        if killed is None:
            raise  # leaving a session whose server was killed fails; anything before the kill is an error
    async with call.session() as server:
        second = await call.send(server)
    return [Reply.lost(f"server {killed} killed with SIGKILL after it answered {first.told}"), second], ""


async def _racing(call: ServerCall) -> tuple[list[Reply], str]:
    replies: list[Reply] = []
    async with call.session() as server:
        async def send() -> None:
            replies.append(await call.send(server))

        async with anyio.create_task_group() as tg:
            tg.start_soon(send)
            tg.start_soon(send)
    return replies, ""


async def _changed(call: ServerCall) -> tuple[list[Reply], str]:
    other = changed(call.tool.input_schema, call.args)
    if other is None:
        raise NotApplicable(NO_CHANGE)
    name, args = other
    async with call.session() as server:
        replies = [await call.send(server), await call.send(server, args)]
    return replies, f"changed {name}: {call.args.get(name)!r} -> {args[name]!r}"


_STAGINGS: Final[dict[str, Callable[[ServerCall], Awaitable[tuple[list[Reply], str]]]]] = {
    "reply_lost": _reply_lost,
    "worker_killed": _worker_killed,
    "racing_resends": _racing,
    "changed_arguments": _changed,
    "new_request_id": _new_request_id,
}


def _reply(result: types.CallToolResult) -> Reply:
    """A toolproof envelope when the server sends one (in structuredContent), else ok or isError and its text."""
    data = result.structured_content
    if isinstance(data, dict) and isinstance(data.get("ok"), bool) and "meta" in data:
        try:
            return Reply.of(Envelope.from_dict(data))
        except MalformedEnvelope:
            pass
    if result.is_error:
        text = " ".join(c.text for c in result.content if isinstance(c, types.TextContent))
        return Reply(False, f"isError: {text[:120]}")
    return Reply(True, "ok")


def _number(result: types.CallToolResult) -> float | None:
    data = result.structured_content
    if isinstance(data, dict) and "result" in data:  # a toolproof envelope: the tool's own answer
        data = data["result"]
    found = _first_number(data)
    if found is not None:
        return found
    for block in result.content:
        if isinstance(block, types.TextContent):
            try:
                return float(block.text.strip())
            except ValueError:
                continue
    return None


def _first_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        found = _first_number(item)
        if found is not None:
            return found
    return None


def _children() -> set[int]:
    """This process's child processes (Linux /proc), to find the server the SDK started."""
    found: set[int] = set()
    for task in Path("/proc/self/task").glob("*/children"):
        try:
            found.update(int(p) for p in task.read_text().split())
        except OSError:
            continue
    return found

