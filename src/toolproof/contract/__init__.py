"""The contract every tool call keeps: definitions (`_tool`), the envelope (`_envelope`), the error classes
(`_errors`), the classifier (`_classify`), validation and redaction, all internal modules.

Nothing is re-exported here: what users write is at the root (`toolproof.tool`, `toolproof.Envelope`, ...)."""

__all__: list[str] = []
