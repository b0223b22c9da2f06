"""What an operator's tooling asks a running gateway: `/healthz` (the process serves), `/readyz` (its upstreams
and its store answer), `/metrics` (Prometheus).

On the HTTP gateway these routes sit beside `/mcp` on the same port, without authentication (as probes and
scrapers expect: bind the gateway where only they and the clients reach it, or give the ops routes their own
port with `--metrics-port`). A stdio gateway serves them only on `--metrics-port`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from ._caps import ResponseCaps
from ._config import GatewayConfig
from ._connection import _describe
from ._metrics import CONTENT_TYPE, Snapshot

if TYPE_CHECKING:
    from ._gateway import Gateway

log: Final = logging.getLogger("toolproof.gateway")

#: How long `/readyz` waits for each upstream's `tools/list` and for the store (seconds).
READY_TIMEOUT_S: Final = 3.0
#: The most rows a scrape counts of unknown outcomes and pending approvals (the gauge stops there).
COUNT_LIMIT: Final = 10_000


def snapshot(gw: Gateway) -> Snapshot:
    """The state the metrics report at scrape time (blocking: reads the store and, when shared, the breakers)."""
    if not gw.started:
        return Snapshot()
    runner = gw.runner
    breakers: dict[str, str] = {}
    for conn in gw.connections:
        breaker = runner.breaker(conn.upstream.name)
        if breaker is not None:
            breakers[conn.upstream.name] = breaker.state.value
    store = runner.store
    unknown: int | None
    pending: int | None
    try:
        unknown = len(store.journal_list(status="unknown", limit=COUNT_LIMIT))
    except Exception as exc:  # the scrape still answers; the gauge is left out and the log says why
        log.warning("metrics: cannot count unknown outcomes: %s", _describe(exc))
        unknown = None
    try:
        pending = len(store.approval_list(status="pending", limit=COUNT_LIMIT))
    except Exception as exc:
        log.warning("metrics: cannot count pending approvals: %s", _describe(exc))
        pending = None
    limiter = getattr(runner, "limiter", None)
    cleaned: dict[str, int] = {conn.upstream.name: 0 for conn in gw.connections if not conn.upstream.trusted}
    for row in gw.treatments():
        if row.upstream in cleaned:
            cleaned[row.upstream] += len(row.neutralised)
    return Snapshot(
        breakers=breakers, unknown_outcomes=unknown, approvals_pending=pending,
        drift_blocked_tools=sum(1 for d in gw.drifts if d.action == "blocked"),
        limit_rules=len(limiter.rules) if limiter is not None else 0,
        shared_state_degraded=runner.shared_state.degraded, neutralised=cleaned,
    )


async def readiness(gw: Gateway, timeout_s: float = READY_TIMEOUT_S) -> tuple[bool, dict[str, Any]]:
    """Every upstream answers a `tools/list` and the store answers a read, each within `timeout_s`."""

    async def upstream(conn: Any) -> str:
        try:
            async with asyncio.timeout(timeout_s):
                await conn.list_tools()
        except TimeoutError:
            return f"no answer in {timeout_s:g} s"
        except Exception as exc:
            return _describe(exc)
        return "ok"

    async def store() -> str:
        try:
            async with asyncio.timeout(timeout_s):
                await asyncio.to_thread(gw.runner.store.journal_list, status="unknown", limit=1)
        except TimeoutError:
            return f"no answer in {timeout_s:g} s"
        except Exception as exc:
            return _describe(exc)
        return "ok"

    if not gw.started:
        return False, {"status": "starting"}
    answers = await asyncio.gather(store(), *(upstream(c) for c in gw.connections))
    upstreams = {c.upstream.name: a for c, a in zip(gw.connections, answers[1:], strict=True)}
    detail: dict[str, Any] = {"store": answers[0], "upstreams": upstreams}
    ok = all(a == "ok" for a in answers)
    detail["status"] = "ready" if ok else "not ready"
    return ok, detail


def routes(gw: Gateway) -> list[Any]:
    """The Starlette routes `/healthz`, `/readyz` and `/metrics` of one gateway."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        ok, detail = await readiness(gw)
        return JSONResponse(detail, status_code=200 if ok else 503)

    async def metrics(request: Request) -> Response:
        body = await asyncio.to_thread(gw.metrics.render)
        return Response(body, media_type=CONTENT_TYPE)

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"])]


@contextlib.asynccontextmanager
async def serve_ops(gw: Gateway, *, host: str = "127.0.0.1", port: int = 0, announce: bool = True
                    ) -> AsyncIterator[int]:
    """Serve the ops routes on their own port while the block runs (a stdio gateway's `--metrics-port`);
    yields the bound port. One stderr line `toolproof: serving metrics on URL` once it listens."""
    import uvicorn
    from starlette.applications import Starlette

    from ._server import bind_socket

    sock = bind_socket(host, port)
    bound = sock.getsockname()[1]
    web = uvicorn.Server(uvicorn.Config(Starlette(routes=routes(gw)), log_level="warning", lifespan="off"))
    task = asyncio.create_task(web.serve(sockets=[sock]), name="toolproof-gateway-ops")
    if announce:
        shown = f"[{host}]" if ":" in host else host
        print(f"toolproof: serving metrics on http://{shown}:{bound}/metrics", file=sys.stderr, flush=True)
    try:
        yield bound
    finally:
        web.should_exit = True
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, 5)
        sock.close()


def summarize(old: GatewayConfig, new: GatewayConfig) -> list[str]:
    """One line per reloadable section that changed (for the reload's log line)."""
    out = []
    if old.caps != new.caps:
        out.append(f"caps: {describe_caps(old.caps)} -> {describe_caps(new.caps)}")
    if old.limits != new.limits:
        out.append(f"limits: {len(old.limits)} rule(s) -> {len(new.limits)} rule(s) "
                   f"({', '.join(r.name for r in new.limits) or 'none'})")
    return out


def describe_caps(caps: ResponseCaps) -> str:
    return (f"response {caps.max_response_bytes:,} bytes / {caps.max_response_chars:,} chars, "
            f"request {caps.max_request_bytes:,} bytes")


def warn_unmatched(names: Sequence[str]) -> None:
    for name in names:
        log.warning("[[limits]] %r picks none of the served tools; it limits nothing", name)
