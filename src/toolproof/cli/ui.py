"""`toolproof ui`: serve the operator's inbox (approvals, stops, unknown outcomes, audit, dashboard) for a store."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import StoreOpt, fail, open_existing, say, shown_store


def ui_cmd(
    store: StoreOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind; beyond 127.0.0.1 needs --token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = 8765,
    token: Annotated[str | None, typer.Option("--token", envvar="TOOLPROOF_UI_TOKEN", show_default=False,
                                              help="Required for any address beyond loopback (16+ chars).")] = None,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="Another Host header name to answer (e.g. the name of a reverse proxy).")] = None,
) -> None:
    """Serve the inbox on http://HOST:PORT/ for the store the agents write to (SQLite or PostgreSQL)."""
    try:
        import uvicorn

        from ..inbox import create_app
        from ..inbox.security import RefusedToStart, check_binding, hosts_for
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise fail(f"the inbox needs its extra: pip install 'toolproof[ui]' ({exc})") from None
    try:
        check_binding(host, token)
    except RefusedToStart as exc:
        raise fail(str(exc)) from None
    db = open_existing(store)
    app = create_app(db, allowed_hosts=hosts_for(host, allow_host or ()), token=token)
    say(f"toolproof inbox for {shown_store(store)} on http://{host}:{port}/", stderr=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        db.close()


def register(app: typer.Typer) -> None:
    app.command("ui")(ui_cmd)
