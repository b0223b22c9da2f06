"""State that a fleet of workers shares: circuit breakers and the retry token bucket (Redis or PostgreSQL).

`open_shared_state(url)` picks the backend by URL: `memory` (None; each process alone, the default),
`redis://...` or `postgresql://...`. A `Runner(..., shared_state=URL)` takes its breakers and its retry
quota from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .._extras import needs_extra
from .._surface import publish_all
from ..orchestration.breaker import Breaker, BreakerConfig, CircuitBreaker
from ..orchestration.policy import RetryBucket, RetryTokenBucket
from ._state import Backend, Outage, SharedBreaker, SharedBucket, SharedRates

__all__ = ["SharedState", "open_shared_state"]


class SharedState:
    """Where a runner's breakers and retry quota live: this process (no backend), or a shared store."""

    def __init__(self, backend: Backend | None = None, *, retry_s: float = 1.0) -> None:
        self.backend = backend
        self.outage = Outage(backend.label if backend else "memory", retry_s)

    @property
    def shared(self) -> bool:
        return self.backend is not None

    @property
    def degraded(self) -> bool:
        """True while the shared store is unreachable and workers decide on their local state."""
        return self.outage.degraded

    def breaker(self, name: str, config: BreakerConfig, *, clock: Callable[[], float] = time.monotonic) -> Breaker:
        """The breaker for one tool or upstream name (the same fleet-wide state for the same name)."""
        if self.backend is None:
            return CircuitBreaker(name, config, clock=clock)
        return SharedBreaker(name, config, self.backend, self.outage, clock)

    def bucket(self, name: str = "retry", **sizes: int) -> RetryBucket:
        """The retry token bucket (`RetryTokenBucket`'s sizes); with a backend, its quota is fleet-wide."""
        local = RetryTokenBucket(**sizes)
        if self.backend is None:
            return local
        return SharedBucket(name, local, self.backend, self.outage)

    def rate_limits(self) -> SharedRates | None:
        """Fleet-wide rate-limit buckets (the gateway's `shared` limits), or None without a backend."""
        if self.backend is None:
            return None
        return SharedRates(self.backend, self.outage)

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()


def open_shared_state(url: str | None = None, *, timeout_s: float | None = None, retry_s: float = 1.0) -> SharedState:
    """Shared state for a URL: None or `memory` (per process), `redis://HOST:PORT/DB`, `postgresql://...`.

    `?prefix=NAME` (Redis keys) or `?schema=NAME` (PostgreSQL tables) keeps one fleet apart from another.
    `timeout_s` bounds each round trip (default 0.25 s for Redis; 1 s for PostgreSQL, whose row locks queue
    when many workers record failures at once); after a failure the backend is tried again every `retry_s` s.
    """
    if url is None or url in ("memory", "memory://"):
        return SharedState(None)
    if not isinstance(url, str):
        raise TypeError(f"shared_state must be a URL string, got {type(url).__name__}")
    base, options = _split_options(url)
    if url.startswith(("redis://", "rediss://", "unix://")):
        try:
            from ._redis_backend import RedisBackend
        except ImportError as exc:  # a plain `pip install toolproof`: name the extra in one line
            raise needs_extra("shared_state='redis://...'", exc) from exc

        backend: Backend = RedisBackend(base, prefix=options.get("prefix", "toolproof"), timeout_s=timeout_s or 0.25)
        return SharedState(backend, retry_s=retry_s)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from ._postgres_backend import PostgresBackend
        except ImportError as exc:
            raise needs_extra("shared_state='postgresql://...'", exc) from exc

        backend = PostgresBackend(base, schema=options.get("schema", "public"), timeout_s=timeout_s or 1.0)
        return SharedState(backend, retry_s=retry_s)
    raise ValueError(f"unsupported shared_state URL {url!r}: use memory, redis://... or postgresql://...")


def _split_options(url: str) -> tuple[str, dict[str, str]]:
    """The URL without toolproof's own options (prefix, schema), and those options."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    ours: dict[str, str] = {k: query.pop(k) for k in ("prefix", "schema") if k in query}
    return urlunsplit(parts._replace(query=urlencode(query))), ours

publish_all(globals())
