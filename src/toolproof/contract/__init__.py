"""The contract every tool call keeps: definitions (`tool`), the envelope (`envelope`), the error classes
(`errors`), the classifier (`classify`), validation and redaction.

Nothing is re-exported here: what users write is at the root (`toolproof.tool`, `toolproof.Envelope`, ...)."""

__all__: list[str] = []
