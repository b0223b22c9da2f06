"""Readiness and what a reload may change: a real HTTP upstream (`toolproof serve --http` in a subprocess)
that goes away makes the gateway not ready, and says which upstream; a reload names what needs a restart."""

from __future__ import annotations

import dataclasses

import pytest

from tests.mcp_servers.harness import http_server
from toolproof.mcp import ConfigError, Gateway, GatewayConfig, LimitRule, ResponseCaps, Upstream
from toolproof.mcp.health import check_reload, not_reloadable
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


def test_a_reload_may_change_caps_and_limits_only() -> None:
    up = Upstream(name="a", command=("python", "-m", "a"))
    old = GatewayConfig(upstreams=(up,))
    new = dataclasses.replace(old, caps=ResponseCaps(max_response_chars=5000), limits=(LimitRule("r", rate=1),))
    assert not_reloadable(old, new) == []
    check_reload(old, new)
    moved = dataclasses.replace(new, upstreams=(dataclasses.replace(up, trusted=True),
                                                Upstream(name="b", url="http://127.0.0.1:1/mcp")),
                                store="sqlite:///other.sqlite3")
    assert not_reloadable(old, moved) == ["[gateway] store", "[upstreams.a] changed", "[upstreams.b] added"]
    with pytest.raises(ConfigError, match=r"only \[caps\] and \[\[limits\]\] change without a restart"):
        check_reload(old, moved)
