"""An in-memory store: the default for `Runner(toolset)`; state lives as long as the object."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from time import time

from ..records import AuditRecord, EffectStatus, StopRecord
from .base import Store


class MemoryStore(Store):
    url = "memory://"

    def __init__(self, *, max_audit: int = 100_000) -> None:
        self._lock = threading.Lock()
        self._audit: list[AuditRecord] = []
        self._max_audit = max_audit
        self._stops: dict[str, StopRecord] = {}

    def append_audit(self, records: Sequence[AuditRecord]) -> None:
        with self._lock:
            self._audit.extend(records)
            overflow = len(self._audit) - self._max_audit
            if overflow > 0:
                del self._audit[:overflow]

    def list_audit(self, *, limit: int = 100, tool: str | None = None) -> list[AuditRecord]:
        with self._lock:
            rows = [r for r in reversed(self._audit) if tool is None or r.tool == tool]
        return rows[:limit]

    def field_failures(self) -> list[tuple[str, str, str | None, int]]:
        counts: Counter[tuple[str, str, str | None]] = Counter()
        with self._lock:
            for rec in self._audit:
                if rec.validation == "failed":
                    for name in rec.failing_fields or ("<arguments>",):
                        counts[(rec.tool, name, rec.schema_version)] += 1
        return [(t, f, v, n) for (t, f, v), n in counts.most_common()]

    def add_stop(self, stop: StopRecord) -> None:
        with self._lock:
            self._stops[stop.id] = stop

    def list_stops(self, *, resolved: bool | None = None, limit: int = 100) -> list[StopRecord]:
        with self._lock:
            stops = sorted(self._stops.values(), key=lambda s: s.at, reverse=True)
        if resolved is not None:
            stops = [s for s in stops if (s.resolved_at is not None) == resolved]
        return stops[:limit]

    def get_stop(self, stop_id: str) -> StopRecord | None:
        with self._lock:
            return self._stops.get(stop_id)

    def resolve_stop(
        self, stop_id: str, *, resolution: str, effect_status: EffectStatus | None = None
    ) -> StopRecord | None:
        with self._lock:
            stop = self._stops.get(stop_id)
            if stop is None:
                return None
            updated = replace(
                stop,
                resolved_at=time(),
                resolution=resolution,
                effect_status=effect_status or stop.effect_status,
            )
            self._stops[stop_id] = updated
            return updated
