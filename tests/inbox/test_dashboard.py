"""The dashboard's breakers, read from the fleet's shared state (the real Redis on 127.0.0.1:6379, the real
PostgreSQL): a breaker a worker's failures opened shows open, the others closed; a state store that does not
answer is said, never shown as closed breakers."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

import toolproof
from tests.cli._run import toolproof_cli
from tests.inbox.conftest import free_port
from toolproof.fleet import open_shared_state
from toolproof.inbox import create_app
from toolproof.orchestration.breaker import BreakerConfig
from toolproof.stores import MemoryStore


def desk() -> toolproof.Toolset:
    @toolproof.tool(effect="read", upstream="market")
    def quote(crop: str) -> dict[str, str]:
        """Today's price of a crop at the market.

        Args:
            crop: The crop's name.
        """
        raise toolproof.TransientUpstream("the market's price service answered 503")

    @toolproof.tool(effect="read")
    def weather(city: str) -> dict[str, str]:
        """Today's weather in a city.

        Args:
            city: The city's name.
        """
        return {"city": city, "sky": "clear"}

    return toolproof.Toolset([quote, weather])


def states(page: str) -> dict[str, str]:
    table = page.split('data-testid="breaker-states"', 1)[1].split("</table>", 1)[0]
    return dict(re.findall(r"<tr><td>([^<]+)</td><td><span class=\"pill[^\"]*\">([a-z-]+)</span>", table))


def test_breakers_show_the_fleets_state(shared_url: str) -> None:
    store = MemoryStore()
    with toolproof.Runner(desk(), store=store, shared_state=shared_url, retry=None, loop_guard=None,
                          breakers=BreakerConfig(failure_threshold=2, recovery_s=30.0)) as worker:
        for _ in range(2):
            worker.call_sync("quote", {"crop": "millet"})
        assert worker.call_sync("weather", {"city": "Pune"}).ok
        worker.flush()
        fleet = open_shared_state(shared_url)
        try:
            c = TestClient(create_app(store, tools=desk(), shared_state=fleet), base_url="http://127.0.0.1:8765")
            page = c.get("/dashboard").text
        finally:
            fleet.close()
    assert states(page) == {"market": "open", "weather": "closed"}  # named as the runner names them: by upstream
    assert "From the fleet" in page and "breaker-states-away" not in page
    plain = TestClient(create_app(store), base_url="http://127.0.0.1:8765").get("/dashboard").text
    assert 'data-testid="breaker-states"' not in plain  # without shared state: the stop records alone


@pytest.mark.parametrize("scheme", ["redis", "postgresql"])
def test_a_state_store_away_is_said_not_shown_as_closed(scheme: str) -> None:
    port = free_port()  # nothing listens there
    url = f"redis://127.0.0.1:{port}/0" if scheme == "redis" else f"postgresql://postgres@127.0.0.1:{port}/test"
    fleet = open_shared_state(url)
    try:
        page = TestClient(create_app(MemoryStore(), tools=desk(), shared_state=fleet),
                          base_url="http://127.0.0.1:8765").get("/dashboard").text
    finally:
        fleet.close()
    assert 'data-testid="breaker-states-away"' in page and "breaker states unknown" in page
    assert 'data-testid="breaker-states"' not in page


def test_ui_refuses_a_shared_state_that_is_not_shared() -> None:
    for url, said in (("memory", "needs redis://"), ("ftp://x", "unsupported shared_state URL")):
        proc = toolproof_cli("ui", "--shared-state", url, "--store", "sqlite:///nowhere.sqlite3", code=2)
        assert proc.stderr.startswith("error: --shared-state") and said in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
