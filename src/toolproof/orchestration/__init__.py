"""Retry policy, budgets, breakers and the loop guard: pure decisions, no sleeping and no I/O.

Nothing is re-exported here: what users write is at the root (`toolproof.RetryPolicy`, `toolproof.BreakerConfig`);
the three modules, `policy`, `breaker` and `guard`, are public (docs/orchestration.md imports from them)."""

__all__: list[str] = []
