"""Serve a guarded toolset over MCP: our validator, our envelope, the SDK's low-level `Server` for the wire.

The SDK's high-level `MCPServer` drops unknown arguments and answers validation failures with text only,
so we build on the low-level `Server`: every `tools/call` goes through `Runner.call`, and every result is
the envelope, as `structuredContent` and as JSON text. An unknown tool is a JSON-RPC protocol error
(`-32602`), as the spec says; everything a tool itself does wrong is a tool result with `isError: true`.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import uuid
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import mcp_types as types
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import SERVER_INFO_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..catalog._toolset import mcp_definition
from ..contract._context import CallContext
from ..contract._envelope import Envelope, Meta, envelope_schema
from ..contract._errors import PermissionDenied, UnknownTool
from ..pipeline._runner import Runner
from ._repeat import answered_occurrence, input_required

if TYPE_CHECKING:
    from ._auth import HttpAuth, IdentityBinding

#: `_meta` keys read from a `tools/call` request (the arguments the model writes are never used for these).
META_CONVERSATION_ID: Final = "dev.toolproof/conversation_id"
META_PRINCIPAL: Final = "dev.toolproof/principal"
META_RUN_ID: Final = "dev.toolproof/run_id"
META_OCCURRENCE: Final = "dev.toolproof/occurrence"

#: The HTTP header that names the conversation for clients that cannot send `_meta` (langchain-mcp-adapters):
#: set once per client connection (`headers=`), read when a request's `_meta` names no conversation.
CONVERSATION_HEADER: Final = "toolproof-conversation-id"
#: Its twin for the principal (under authentication the verified token decides, as for `_meta`).
PRINCIPAL_HEADER: Final = "toolproof-principal"

DEFAULT_SERVER_NAME: Final = "toolproof"

#: toolproof's MCP extension (2026-07-28 `capabilities.extensions`): operation identity and replay. Its
#: settings say which `_meta` keys name who is asking and which tools are journaled writes (docs/mcp.md).
OPERATIONS_EXTENSION: Final = "dev.toolproof/operations"
OPERATIONS_EXTENSION_VERSION: Final = "1"


def operations_extension(runner: Runner) -> dict[str, Any]:
    """The settings `toolproof serve` and the gateway announce under `OPERATIONS_EXTENSION`.

    The identity keys are the ones `call_context` reads; `journaledTools` are the writes whose repeats (a
    resend, a request re-issued under a new JSON-RPC id after a broken stream) replay instead of running.
    """
    return {
        "version": OPERATIONS_EXTENSION_VERSION,
        "meta": {"conversation": META_CONVERSATION_ID, "principal": META_PRINCIPAL, "run": META_RUN_ID,
                 "occurrence": META_OCCURRENCE},
        "headers": {"conversation": CONVERSATION_HEADER, "principal": PRINCIPAL_HEADER},
        "journaledTools": sorted(t.name for t in runner.toolset if t.effect == "write"),
        "requestIdInKey": False,
        "unknownConversation": runner.journal.unknown_conversation,
    }


def tool_result(envelope: Envelope, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    """An envelope as an MCP tool result: `structuredContent` plus the same JSON as text; `isError` on failure.
    `meta`: the result's `_meta`."""
    data = envelope.to_dict()
    return types.CallToolResult(
        content=[types.TextContent(text=envelope.to_json())],
        structured_content=data,
        is_error=not envelope.ok,
        _meta=meta,
    )


def list_definitions(runner: Runner) -> list[types.Tool]:
    """The `tools/list` items: strict `inputSchema`, envelope `outputSchema`, title, annotations."""
    items = []
    for tool in runner.toolset:
        definition = mcp_definition(tool)
        definition["outputSchema"] = output_schema(tool.output_schema)
        items.append(types.Tool.model_validate(definition, by_alias=True))
    return items


def output_schema(result_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `outputSchema` of a served tool: the envelope, its success branch narrowed to the tool's result.

    The failure branch is included because some clients (the TypeScript SDK, so the MCP Inspector) check
    `structuredContent` against `outputSchema` even when `isError` is true. No `$id`/`$schema`: clients
    compile many tools' schemas into one validator and would reject a repeated `$id`. The envelope's own
    `meta` and `error` are written in place, not as `$ref`s: the same schema, but a client checking every
    result (the Python SDK's `call_tool`, with `jsonschema`) spends about a third less on each one without
    resolving references.
    """
    full = envelope_schema(result_schema)
    defs = full["$defs"]
    success, failure = full["oneOf"]
    inlined = {"meta": defs["meta"], "error": defs["error"]}
    schema: dict[str, Any] = {
        "type": "object",
        "description": full["description"],
        "oneOf": [_inline_refs(success, inlined), _inline_refs(failure, inlined)],
    }
    return hoist_result_defs(schema)


def _inline_refs(branch: dict[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """An envelope branch with its properties that are `{"$ref": "#/$defs/NAME"}` (NAME in `defs`) written in
    place; the `result` schema is left as it is (its own refs are hoisted by `hoist_result_defs`)."""
    properties = dict(branch["properties"])
    for key, value in properties.items():
        ref = value.get("$ref") if isinstance(value, dict) and len(value) == 1 else None
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs and key != "result":
            properties[key] = defs[ref[8:]]
    return {**branch, "properties": properties}


def hoist_result_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """Move `$defs` of the nested `result` schema to the root, so its `#/$defs/...` refs resolve there.

    A result schema with its own `$defs` (recursive models, or an imported upstream's `outputSchema`) is
    nested under the success branch's `properties.result`, where its root-relative refs point nowhere.
    """
    success = schema["oneOf"][0]
    result = success.get("properties", {}).get("result")
    if not isinstance(result, dict) or not isinstance(result.get("$defs"), dict):
        return schema
    inner = dict(result)
    defs = inner.pop("$defs")
    renamed = {name: f"result__{name}" for name in defs}

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: rewrite(v) for k, v in node.items()}
            ref = out.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in renamed:
                out["$ref"] = "#/$defs/" + renamed[ref[8:]]
            return out
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    root_defs = {**schema.get("$defs", {}), **{renamed[name]: rewrite(body) for name, body in defs.items()}}
    new_success = {**success, "properties": {**success["properties"], "result": rewrite(inner)}}
    return {**schema, "oneOf": [new_success, *schema["oneOf"][1:]], "$defs": root_defs}


class _SessionIds:
    """A stable random id per MCP client connection: the session of a request (never its conversation)."""

    def __init__(self) -> None:
        self._ids: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def get(self, session: Any) -> str:
        try:
            found = self._ids.get(session)
        except TypeError:  # not weak-referenceable: fall back to its identity
            return f"mcp-{id(session):x}"
        if found is None:
            found = f"mcp-{uuid.uuid4().hex}"
            self._ids[session] = found
        return found


class LiveTools:
    """For a server whose tools can change while it runs (the gateway's drift re-check): `refresh` runs before
    each `tools/list`, and `changed()` tells connected clients to list again (`notifications/tools/list_changed`
    on handshake-era connections, an event on 2026-07-28 `subscriptions/listen` streams)."""

    def __init__(self, refresh: Callable[[], Awaitable[None]] | None = None) -> None:
        self.refresh = refresh
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()

    def seen(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Remember the client connection of a request (private in the SDK: skipped when absent)."""
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and hasattr(connection, "send_tool_list_changed"):
            with contextlib.suppress(TypeError):
                self._connections.add(connection)

    async def changed(self) -> None:
        for connection in list(self._connections):
            if getattr(connection, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
                await connection.send_tool_list_changed()  # best effort: the SDK drops it on a closed stream
        await self.bus.publish(ToolsListChanged())


def call_context(
    ctx: ServerRequestContext[Any, Any],
    session_ids: _SessionIds | None = None,
    *,
    transport_session: str | None = None,
) -> CallContext:
    """The `CallContext` for one request: ids from the request's `_meta`, never from the arguments.

    Keys: `dev.toolproof/conversation_id`, `dev.toolproof/principal`, `dev.toolproof/run_id`,
    `dev.toolproof/occurrence`; over HTTP the `Toolproof-Conversation-Id` and `Toolproof-Principal` headers
    name them when `_meta` does not (for clients that cannot send `_meta`; with authentication the verified
    token decides the principal and owns the conversation, as for `_meta`). Without a conversation id the
    conversation is unknown (None): a session or a process is not a conversation (a client may open one per
    call, or serve many conversations through one).
    The transport's id goes to `session_id` (the loop guard's scope): `transport_session` (stdio serves one
    client per process), else the HTTP `mcp-session-id` header, else the SDK's client connection.
    """
    meta: Mapping[str, Any] = ctx.meta or {}
    occurrence = meta.get(META_OCCURRENCE)
    request_id = ctx.request_id
    return CallContext(
        conversation_id=_text(meta.get(META_CONVERSATION_ID)) or _header(ctx, CONVERSATION_HEADER),
        principal=_text(meta.get(META_PRINCIPAL)) or _header(ctx, PRINCIPAL_HEADER),
        run_id=_text(meta.get(META_RUN_ID)),
        occurrence=occurrence if isinstance(occurrence, int) and not isinstance(occurrence, bool) else 0,
        metadata={"mcp_request_id": request_id} if request_id is not None else {},
        session_id=transport_session or _http_session_id(ctx) or _connection_id(ctx, session_ids),
    )


def _connection_id(ctx: ServerRequestContext[Any, Any], session_ids: _SessionIds | None) -> str:
    # The SDK makes a `ServerSession` per request; its `Connection` is the client's (one per stdio process,
    # one per HTTP session). `_connection` is private, so fall back to the session object without it.
    owner = getattr(ctx.session, "_connection", None) or ctx.session
    return (session_ids or _SessionIds()).get(owner)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _http_session_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    value = _header(ctx, "mcp-session-id")
    return f"mcp-{value}" if value else None


def _header(ctx: ServerRequestContext[Any, Any], name: str) -> str | None:
    """A non-empty HTTP request header (None over stdio, where a request has no headers)."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get(name)
    except (AttributeError, TypeError):
        return None
    return value.strip() if isinstance(value, str) and value.strip() else None


def create_server(
    runner: Runner,
    *,
    name: str = DEFAULT_SERVER_NAME,
    instructions: str | None = None,
    sdk_tracing: bool = False,
    transport_session: str | None = None,
    identity: IdentityBinding | None = None,
    live: LiveTools | None = None,
) -> Server[Any]:
    """A low-level MCP `Server` whose `tools/list` and `tools/call` are the runner's toolset and pipeline.

    `sdk_tracing=False` drops the SDK's per-message OpenTelemetry middleware (span work on every message,
    exporter or not); toolproof's own `execute_tool` spans are the runner's. `transport_session` is
    the session id of every request, when the transport serves one client only (stdio: the process).
    `identity` (set by `serve_http` with authentication) takes the principal from the verified token and
    refuses calls that claim another principal or another identity's conversation. `live`: the tools may
    change while serving (see `LiveTools`); the listing follows `runner.toolset`.
    """
    from .._version import __version__

    session_ids = _SessionIds()
    listed_tools, definitions = tuple(runner.toolset), list_definitions(runner)

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        nonlocal listed_tools, definitions
        if live is not None:
            live.seen(ctx)
            if live.refresh is not None:
                await live.refresh()
        if tuple(runner.toolset) != listed_tools:  # a tool was replaced, or a gateway reload swapped the toolset
            listed_tools, definitions = tuple(runner.toolset), list_definitions(runner)
            server.extensions[OPERATIONS_EXTENSION] = operations_extension(runner)
        return types.ListToolsResult(tools=definitions)

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name not in runner.toolset:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool: {params.name}",
                data={"known_tools": runner.toolset.names},
            )
        if live is not None:
            live.seen(ctx)
        context = call_context(ctx, session_ids, transport_session=transport_session)
        if identity is not None:
            try:
                context = identity.bind(context, ctx.request)
            except PermissionDenied as exc:
                return tool_result(Envelope.failure(exc, Meta(params.name, f"refused-{uuid.uuid4().hex[:16]}")))
        confirmed = answered_occurrence(params)
        if confirmed is not None:  # a person said "a second one" to the question below: that occurrence
            context = context.with_updates(occurrence=confirmed)
        arguments = params.arguments if params.arguments is not None else {}
        try:
            envelope = await runner.call(params.name, arguments, context=context)
        except UnknownTool as exc:  # pragma: no cover - checked above; kept for toolsets that change
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {exc.name}") from None
        asked = None if params.input_responses else input_required(envelope, params.name, context, ctx)
        # On 2026-07-28 sessions the result carries the server's identity (`serverInfo` in `_meta`): given here,
        # from one copy made at start, the SDK does not deep-copy it into every result.
        return asked or tool_result(envelope, stamp if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else None)

    server: Server[Any] = Server(
        name,
        version=__version__,
        instructions=instructions,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_subscriptions_listen=live.listen if live is not None else None,
    )
    server.extensions[OPERATIONS_EXTENSION] = operations_extension(runner)
    stamp = {SERVER_INFO_META_KEY: server.server_info_stamp}
    if not sdk_tracing:
        server.middleware[:] = [m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)]
    return server


async def serve_stdio(runner: Runner, *, name: str = DEFAULT_SERVER_NAME, live: LiveTools | None = None) -> None:
    """Serve the runner's toolset on this process's stdin/stdout until the client closes it."""
    from ._stdio import stdio_streams

    server = create_server(runner, name=name, transport_session=f"mcp-stdio-{uuid.uuid4().hex}", live=live)
    options = server.create_initialization_options(NotificationOptions(tools_changed=live is not None))
    async with stdio_streams() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket (port 0 picks a free one: read it back with `getsockname()`)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve_http(
    runner: Runner,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    name: str = DEFAULT_SERVER_NAME,
    announce: bool = True,
    auth: HttpAuth | None = None,
    allowed_hosts: Sequence[str] = (),
    live: LiveTools | None = None,
    routes: Sequence[Any] = (),
) -> None:
    """Serve over streamable HTTP at `http://HOST:PORT/mcp` until cancelled (plus `routes`: Starlette routes
    beside it, such as the gateway's `/metrics`).

    A non-loopback `host` needs `auth` (`InsecureBind` otherwise). Host and Origin headers are checked on
    every bind: loopback names, the bound address and `allowed_hosts` pass. With `announce`, one line
    `toolproof: serving MCP on URL` goes to stderr once the socket listens (so `--port 0` callers can read
    the port that was picked).
    """
    import uvicorn

    from ._auth import HostCheck, IdentityBinding, check_bind, host_names, transport_security

    check_bind(host, auth)
    identity = IdentityBinding(auth.max_conversations) if auth is not None else None
    server = create_server(runner, name=name, identity=identity, live=live)
    app = server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        transport_security=transport_security(host, allowed_hosts),
        auth=auth.sdk_settings() if auth is not None else None,
        token_verifier=auth.verifier if auth is not None else None,
    )
    app.router.routes.extend(routes)
    app.add_middleware(HostCheck, names=host_names(host, allowed_hosts), path=path)
    sock = bind_socket(host, port)
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    if announce:
        print(f"toolproof: serving MCP on http://{shown_host}:{bound_port}{path}", file=sys.stderr, flush=True)
    try:
        await web.serve(sockets=[sock])
    finally:
        sock.close()
