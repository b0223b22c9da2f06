"""The audit trail and stop records (`trail`), and where the versions of what ran are kept (`versions`).

Nothing is re-exported here: what users write is at the root (`toolproof.AuditRecord`, `toolproof.Hook`)."""

__all__: list[str] = []
