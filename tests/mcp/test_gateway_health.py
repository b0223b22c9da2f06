"""Readiness and what a reload may not change: a real HTTP upstream (`toolproof serve --http` in a subprocess)
that goes away makes the gateway not ready, and says which upstream; a reload names what needs a restart."""

from __future__ import annotations

import dataclasses

import pytest

from tests.mcp_servers.harness import http_server
from toolproof.mcp import Gateway, GatewayConfig, LimitRule, ResponseCaps, Upstream
from toolproof.mcp._reload import restart_only
from toolproof.stores import MemoryStore

pytestmark = pytest.mark.timeout(120)


async def test_an_upstream_that_goes_away_makes_the_gateway_not_ready() -> None:
    gw: Gateway | None = None
    try:
        async with http_server("serve", "toolproof.examples.wholesaler:toolset") as url:
            gw = Gateway(GatewayConfig(upstreams=(Upstream(name="shop", url=url, trusted=True),)),
                         store=MemoryStore())
            await gw.start()
            ok, detail = await gw.ready()
            assert ok and detail == {"store": "ok", "upstreams": {"shop": "ok"}, "status": "ready"}
        ok, detail = await gw.ready()  # the upstream server was stopped when the block ended
        assert not ok and detail["status"] == "not ready" and detail["store"] == "ok"
        assert detail["upstreams"]["shop"] != "ok", detail
        snap = gw.snapshot()
        assert snap.breakers == {"shop": "closed"} and snap.unknown_outcomes == 0
    finally:
        if gw is not None:
            await gw.aclose()


def test_a_reload_refuses_only_what_needs_a_restart() -> None:
    up = Upstream(name="a", command=("python", "-m", "a"))
    old = GatewayConfig(upstreams=(up,))
    new = dataclasses.replace(old, caps=ResponseCaps(max_response_chars=5000), limits=(LimitRule("r", rate=1),),
                              upstreams=(dataclasses.replace(up, trusted=True), Upstream(name="b", url="http://x/")))
    assert restart_only(old, new) == []
    moved = dataclasses.replace(new, store="sqlite:///other.sqlite3", name="other")
    assert restart_only(old, moved) == ["[gateway] store", "[gateway] name"]
