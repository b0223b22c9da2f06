"""The audit trail and stop records (`_trail`), and where the versions of what ran are kept (`_versions`): both
internal.

Nothing is re-exported here: what users write is at the root (`toolproof.AuditRecord`, `toolproof.Hook`)."""

__all__: list[str] = []
