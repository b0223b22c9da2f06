"""When the shared store goes away, workers decide on their local state at once, and say so.

Redis: a real redis-server of the test's own, killed mid-run and started again. PostgreSQL: the
backend's connections terminated by the server (`pg_terminate_backend`), and a closed port.
"""

from __future__ import annotations

import logging
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest

from tests.fleet.conftest import free_port
from toolproof.fleet import open_shared_state
from toolproof.orchestration.breaker import BreakerConfig, BreakerState

FAST = BreakerConfig(failure_threshold=3, recovery_s=5.0)
RETRY_S = 0.3


class Outage:
    """A shared store that can be taken away mid-run and given back."""

    def __init__(self, url: str, kill: Callable[[], None], revive: Callable[[], None]) -> None:
        self.url, self.kill, self.revive = url, kill, revive


@pytest.fixture(params=["redis", "postgresql"])
def outage(request: pytest.FixtureRequest, redis_process: Callable[[], subprocess.Popen[bytes]],
           pg_dsn: str) -> Iterator[Outage]:
    if request.param == "redis":
        procs = [redis_process()]
        port = redis_process.port  # type: ignore[attr-defined]

        def kill() -> None:
            procs[-1].kill()
            procs[-1].wait()

        yield Outage(f"redis://127.0.0.1:{port}/0", kill, lambda: procs.append(redis_process()))
        return
    schema = f"fleet_{uuid.uuid4().hex[:12]}"

    def terminate() -> None:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            gone = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                "WHERE application_name = %s", (f"toolproof-fleet:{schema}",)).fetchone()
        assert gone is not None and gone[0] >= 1

    yield Outage(f"{pg_dsn}?schema={schema}", terminate, lambda: None)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_store_killed_mid_run_falls_back_to_local_state_and_comes_back(
    outage: Outage, caplog: pytest.LogCaptureFixture,
) -> None:
    state = open_shared_state(outage.url, retry_s=RETRY_S)
    other = open_shared_state(outage.url, retry_s=RETRY_S)
    breaker, elsewhere = state.breaker("up", FAST), other.breaker("up", FAST)
    for _ in range(FAST.failure_threshold):
        elsewhere.record(failure=True)
    assert not breaker.admit().allowed  # shared: another worker's failures opened it
    outage.kill()
    caplog.set_level(logging.INFO, logger="toolproof.fleet")
    started = time.monotonic()
    admissions = [breaker.admit() for _ in range(200)]
    assert time.monotonic() - started < 1.0  # never blocked on the store
    assert all(a.allowed for a in admissions)  # the local breaker decides: it saw no failure here
    assert state.degraded
    for _ in range(FAST.failure_threshold):  # the local breaker still protects the upstream
        breaker.record(failure=True)
    assert not breaker.admit().allowed
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "unreachable" in warnings[0].getMessage()  # one WARNING per outage
    outage.revive()
    time.sleep(RETRY_S + 0.05)
    breaker.admit()
    assert not state.degraded
    assert any("reachable again" in r.getMessage() for r in caplog.records)
    state.close()
    other.close()


@pytest.mark.parametrize("scheme", ["redis", "postgresql"])
def test_a_store_that_never_answers_costs_one_fast_attempt_per_retry_interval(scheme: str) -> None:
    port = free_port()  # nothing listens there
    url = f"redis://127.0.0.1:{port}/0" if scheme == "redis" else f"postgresql://postgres@127.0.0.1:{port}/test"
    state = open_shared_state(url, retry_s=60)
    breaker, bucket = state.breaker("up", FAST), state.bucket(capacity=10, retry_cost=5)
    started = time.monotonic()
    assert all(breaker.admit().allowed for _ in range(100))
    assert [bucket.try_acquire() for _ in range(3)] == [5, 5, None]  # the local quota, per process
    assert time.monotonic() - started < 1.0
    assert state.degraded and breaker.state is BreakerState.CLOSED
    state.close()
