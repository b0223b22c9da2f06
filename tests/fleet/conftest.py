"""Real backends for the fleet tests: memory, the Redis on 127.0.0.1:6379, PostgreSQL (tests/pg_support.py).

Each test gets its own Redis key prefix or PostgreSQL schema, so parallel runs never collide.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
import redis

from tests.pg_support import postgres_server
from toolproof.fleet import SharedState, open_shared_state
from toolproof.orchestration.breaker import Breaker, BreakerConfig
from toolproof.orchestration.policy import RetryBucket

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    with postgres_server() as dsn:
        yield dsn


@pytest.fixture
def pg_schema(pg_dsn: str) -> Iterator[str]:
    schema = f"fleet_{uuid.uuid4().hex[:12]}"
    yield f"{pg_dsn}?schema={schema}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    prefix = f"test-{uuid.uuid4().hex[:12]}"
    yield f"{REDIS_URL}?prefix={prefix}"
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()


class Fleet:
    """Workers of one fleet: each a `SharedState` of its own (its own connection) on the same URL.

    In memory the fleet is one process, so its workers share one state (that is what "memory" means).
    """

    def __init__(self, url: str | None, **options: Any) -> None:
        self.url = url
        self.options = options
        self.states: list[SharedState] = []
        self._memory: dict[str, Breaker] = {}

    def worker(self) -> SharedState:
        if self.url is None and self.states:
            return self.states[0]
        state = open_shared_state(self.url, **self.options)
        self.states.append(state)
        return state

    def breakers(self, n: int, config: BreakerConfig, name: str = "upstream") -> list[Breaker]:
        if self.url is None:
            one = self._memory.setdefault(name, self.worker().breaker(name, config))
            return [one] * n
        return [self.worker().breaker(name, config) for _ in range(n)]

    def buckets(self, n: int, **sizes: int) -> list[RetryBucket]:
        if self.url is None:
            return [self.worker().bucket("retry", **sizes)] * n
        return [self.worker().bucket("retry", **sizes) for _ in range(n)]

    def close(self) -> None:
        for state in self.states:
            state.close()


@pytest.fixture(params=["memory", "redis", "postgresql"])
def fleet(request: pytest.FixtureRequest) -> Iterator[Fleet]:
    url = None if request.param == "memory" else request.getfixturevalue(
        "redis_prefix" if request.param == "redis" else "pg_schema")
    made = Fleet(url)
    yield made
    made.close()


@pytest.fixture(params=["redis", "postgresql"])
def shared_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("redis_prefix" if request.param == "redis" else "pg_schema"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(port: int) -> subprocess.Popen[bytes]:
    """A throwaway redis-server on `port` (no persistence), up when this returns."""
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            return proc
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.02)


@pytest.fixture
def redis_process() -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    """Start (and restart) a redis-server of our own on one free port; killed at the end."""
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        procs.append(start_redis(port))
        return procs[-1]

    start.port = port  # type: ignore[attr-defined]
    yield start
    for proc in procs:
        proc.kill()
        proc.wait()
