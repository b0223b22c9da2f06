"""The Store interface: where the audit trail, the stop records and the write journal live.

Stores know SQL; nothing else does. A store never imports the runner.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ..records import AuditRecord, EffectStatus, StopRecord


class Store(ABC):
    """One durable (or in-memory) home for audit records, stop records and, later, the journal."""

    url: str = ""

    # --- audit trail ----------------------------------------------------------------------------------
    @abstractmethod
    def append_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append a batch of audit records (called from a background writer, not per call)."""

    @abstractmethod
    def list_audit(self, *, limit: int = 100, tool: str | None = None) -> list[AuditRecord]:
        """The newest records first."""

    @abstractmethod
    def field_failures(self) -> list[tuple[str, str, str | None, int]]:
        """(tool, field, schema_version, count) of validation failures, most frequent first."""

    # --- stop records -----------------------------------------------------------------------------------
    @abstractmethod
    def add_stop(self, stop: StopRecord) -> None: ...

    @abstractmethod
    def list_stops(self, *, resolved: bool | None = None, limit: int = 100) -> list[StopRecord]:
        """The newest stops first; `resolved` filters when given."""

    @abstractmethod
    def get_stop(self, stop_id: str) -> StopRecord | None: ...

    @abstractmethod
    def resolve_stop(
        self, stop_id: str, *, resolution: str, effect_status: EffectStatus | None = None
    ) -> StopRecord | None:
        """Mark a stop resolved (and, when known, settle its effect status); None if there is no such stop."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and flush; a closed store is not used again."""
