"""The runner with `shared_state=URL`: workers (runners with their own connections) share one breaker."""

from __future__ import annotations

import pytest

import toolproof
from tests.fleet.conftest import free_port
from toolproof.orchestration.breaker import BreakerConfig

CONFIG = BreakerConfig(failure_threshold=3, recovery_s=30.0)


def failing_toolset(sent: list[str]) -> toolproof.Toolset:
    @toolproof.tool(effect="read")
    def quote(crop: str) -> dict[str, str]:
        """Today's price of a crop at the market.

        Args:
            crop: The crop's name.
        """
        sent.append(crop)
        raise toolproof.TransientUpstream("the market's price service answered 503")

    return toolproof.Toolset([quote])


def runner(sent: list[str], shared_state: str | None) -> toolproof.Runner:
    return toolproof.Runner(failing_toolset(sent), breakers=CONFIG, retry=None, loop_guard=None,
                            shared_state=shared_state)


def test_failures_in_one_worker_open_the_breaker_for_another(shared_url: str) -> None:
    sent_a: list[str] = []
    sent_b: list[str] = []
    with runner(sent_a, shared_url) as a, runner(sent_b, shared_url) as b:
        for _ in range(CONFIG.failure_threshold):
            assert a.call_sync("quote", {"crop": "millet"}).error.code == "TRANSIENT_UPSTREAM"  # type: ignore[union-attr]
        refused = b.call_sync("quote", {"crop": "millet"})
    assert refused.error is not None and refused.error.code == "CIRCUIT_OPEN"
    assert sent_b == []  # never dispatched: worker b had seen no failure of its own
    assert "shared_state" not in refused.meta.extra


def test_per_process_state_is_the_default_and_shares_nothing() -> None:
    sent_b: list[str] = []
    with runner([], None) as a, runner(sent_b, None) as b:
        for _ in range(CONFIG.failure_threshold):
            a.call_sync("quote", {"crop": "millet"})
        assert b.call_sync("quote", {"crop": "millet"}).error.code == "TRANSIENT_UPSTREAM"  # type: ignore[union-attr]
    assert sent_b == ["millet"]


@pytest.mark.parametrize("scheme", ["redis", "postgresql"])
def test_a_stop_decided_on_local_state_says_so_in_the_envelope_and_stop_record(scheme: str) -> None:
    port = free_port()  # nothing listens there
    url = f"redis://127.0.0.1:{port}/0" if scheme == "redis" else f"postgresql://postgres@127.0.0.1:{port}/test"
    with runner([], url) as worker:
        for _ in range(CONFIG.failure_threshold):
            worker.call_sync("quote", {"crop": "millet"})
        refused = worker.call_sync("quote", {"crop": "millet"})
        assert refused.error is not None and refused.error.code == "CIRCUIT_OPEN"
        assert refused.meta.extra["shared_state"] == "unreachable"
        stops = worker.store.list_stops()
    assert [s.extra.get("shared_state") for s in stops if s.reason == "circuit_open"] == ["unreachable"]
