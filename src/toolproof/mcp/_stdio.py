"""A stdio server transport on non-blocking pipes, for the gateway's hot path.

The SDK's `stdio_server` reads and writes through worker threads (portable, also on Windows); every
message then costs two thread hand-offs, which measured here was most of what a gateway hop adds. On
POSIX, when stdin and stdout are pipes, this module serves the same streams with asyncio pipe transports
instead. Like the SDK, it serves from private duplicates of fds 0 and 1 and points fd 0 at the null device
and fd 1 at stderr while serving, so a stray `print` cannot corrupt the wire. Anything else (a regular
file, Windows) falls back to the SDK's transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from pydantic_core import PydanticSerializationError

from ..contract._redaction import storable

_LINE_LIMIT = 64 * 1024 * 1024


def _is_pipe_like(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def pipes_available() -> bool:
    """True when fds 0 and 1 are pipes or sockets on POSIX (the fast transport applies)."""
    return sys.platform != "win32" and _is_pipe_like(0) and _is_pipe_like(1)


def wire_line(message: types.JSONRPCMessage) -> bytes:
    """One message as a line of UTF-8 JSON. Text UTF-8 cannot carry (a lone surrogate, e.g. a file name decoded
    with surrogateescape) goes out as U+FFFD instead of stopping the server."""
    try:
        data = message.model_dump_json(by_alias=True, exclude_unset=True)
    except PydanticSerializationError:
        plain = message.model_dump(mode="python", by_alias=True, exclude_unset=True)
        data = storable(json.dumps(plain, ensure_ascii=False, separators=(",", ":"), default=str))
    return data.encode("utf-8", "replace") + b"\n"


def rejection(line: bytes) -> bytes:
    """The JSON-RPC error line for input that is not a message: -32700 for text that is not JSON, -32600 for JSON
    that is not a JSON-RPC message (the id is echoed when one can be read)."""
    try:
        parsed = json.loads(line)
    except ValueError:
        error, request_id = types.ErrorData(code=types.PARSE_ERROR, message="Parse error"), None
    else:
        found = parsed.get("id") if isinstance(parsed, dict) else None
        request_id = found if isinstance(found, str | int) and not isinstance(found, bool) else None
        error = types.ErrorData(code=types.INVALID_REQUEST, message="Invalid Request")
    return wire_line(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """`(read_stream, write_stream)` for `Server.run`: asyncio pipes when possible, else the SDK's transport."""
    if not pipes_available():
        from mcp.server.stdio import stdio_server

        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    read_stream_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_stream_reader = create_context_streams[SessionMessage](0)

    async def stdin_reader() -> None:
        try:
            async with read_stream_writer:
                while True:
                    try:
                        line = await reader.readline()
                    except (ValueError, asyncio.LimitOverrunError) as exc:
                        await read_stream_writer.send(exc)
                        continue
                    if not line:
                        break
                    if not line.strip():
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except Exception as exc:
                        writer.write(rejection(line))
                        await read_stream_writer.send(exc)
                        continue
                    await read_stream_writer.send(SessionMessage(message))
        except anyio.ClosedResourceError:  # pragma: no cover - the server stopped first
            await anyio.lowlevel.checkpoint()

    async def stdout_writer() -> None:
        try:
            async with write_stream_reader:
                async for session_message in write_stream_reader:
                    writer.write(wire_line(session_message.message))
                    await writer.drain()
        except (anyio.ClosedResourceError, ConnectionError):  # pragma: no cover - the client went away
            await anyio.lowlevel.checkpoint()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stdin_reader)
            tg.start_soon(stdout_writer)
            yield read_stream, write_stream
    finally:
        read_transport.close()
        write_transport.close()
        with contextlib.suppress(OSError):
            os.dup2(saved_in, 0)
            os.dup2(saved_out, 1)
        for fd in (saved_in, saved_out):
            with contextlib.suppress(OSError):
                os.close(fd)
