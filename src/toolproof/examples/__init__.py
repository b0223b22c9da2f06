"""Runnable examples shipped with the package (`toolproof.examples.wholesaler`: the demo)."""

__all__: list[str] = []
