"""`toolproof ui`: serve the operator's inbox (approvals, stops, unknown outcomes, audit, dashboard) for a store."""

from __future__ import annotations

import socket
from typing import Annotated, Final

import typer

from ..fleet import SharedState, open_shared_state
from ..stores._sqlite import SqliteStore
from ._load import load_toolset
from ._options import StoreOpt, fail, open_existing, say, shown_store

BUSY_WAIT_S: Final = 5.0  # how long an action waits for another process's SQLite write lock


def ui_cmd(
    store: StoreOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind; beyond 127.0.0.1 needs --token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = 8765,
    token: Annotated[str | None, typer.Option("--token", envvar="TOOLPROOF_UI_TOKEN", show_default=False,
                                              help="Required for any address beyond loopback (16+ chars).")] = None,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="Another Host header name to answer (e.g. the name of a reverse proxy).")] = None,
    tools: Annotated[str | None, typer.Option(
        "--toolset", "--tools", help="The agents' toolset as MODULE:ATTR: shows each tool's description, effect "
        "and risk beside its requests, and offers its verify hook for unknown outcomes.")] = None,
    shared_state: Annotated[str | None, typer.Option(
        "--shared-state", help="The fleet's shared state (redis://... or postgresql://...): the dashboard shows "
        "its breakers.")] = None,
) -> None:
    """Serve the inbox on http://HOST:PORT/ for the store the agents write to (SQLite or PostgreSQL)."""
    try:
        import uvicorn

        from ..inbox import create_app
        from ..inbox._security import RefusedToStart, check_binding, hosts_for, is_loopback
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise fail(f"the inbox needs its extra: pip install 'toolproof[ui]' ({exc})") from None
    try:
        check_binding(host, token)
    except RefusedToStart as exc:
        raise fail(str(exc)) from None
    toolset = load_toolset(tools) if tools else None
    fleet = _shared_state(shared_state)
    db = open_existing(store)
    if isinstance(db, SqliteStore):
        db.set_busy_timeout(BUSY_WAIT_S)
    names = hosts_for(host, allow_host or ())
    app = create_app(db, allowed_hosts=names, token=token, tools=toolset, shared_state=fleet)
    try:
        sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as exc:
        db.close()
        if fleet is not None:
            fleet.close()
        raise fail(f"cannot listen on {host}:{port}: {exc}") from None
    # Accepted connections inherit it. asyncio sets it only on sockets made with proto IPPROTO_TCP, which
    # `create_server` does not: without it a small reply waits out the client's delayed ACK (about 40 ms).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    bound = sock.getsockname()[1]  # the real port, also when --port 0 let the system pick one
    say(f"toolproof inbox for {shown_store(store)} on http://{host}:{bound}/", stderr=True)
    if not is_loopback(host):
        say(f"answering to the Host names {', '.join(sorted(names))}; a browser that reaches this machine under "
            "another name (its address on the network, a DNS name) is refused: add it with --allow-host NAME",
            stderr=True)
    try:
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    finally:
        sock.close()
        db.close()
        if fleet is not None:
            fleet.close()


def _shared_state(url: str | None) -> SharedState | None:
    """The fleet's shared state, opened without a round trip (a backend away shows on the dashboard)."""
    if url is None:
        return None
    try:
        state = open_shared_state(url)
    except (ValueError, ImportError) as exc:
        raise fail(f"--shared-state: {exc}") from None
    if not state.shared:
        raise fail("--shared-state needs redis://... or postgresql://... (memory is each process's own)")
    return state


def register(app: typer.Typer) -> None:
    app.command("ui")(ui_cmd)
