"""The package root re-exports a small, complete public surface."""

from __future__ import annotations

import toolproof


def test_every_name_in_all_resolves() -> None:
    for name in toolproof.__all__:
        assert getattr(toolproof, name) is not None, name


def test_subpackages_stay_namespaced() -> None:
    import toolproof.evals
    import toolproof.lint
    import toolproof.mcp
    import toolproof.retrieval

    assert callable(toolproof.lint.lint)
    assert callable(toolproof.mcp.import_tools)
    assert callable(toolproof.evals.run_selection)
    assert toolproof.retrieval.ToolIndex is not None


def test_hand_written_inits_match_the_fields() -> None:
    """CallContext, Meta and Envelope build themselves with one dict update (speed); their fields agree."""
    import dataclasses
    import inspect

    for cls in (toolproof.CallContext, toolproof.Meta, toolproof.Envelope):
        params = list(inspect.signature(cls.__init__).parameters)[1:]
        assert params == [f.name for f in dataclasses.fields(cls)], cls
    ctx = toolproof.CallContext("c", "p")
    with __import__("pytest").raises(dataclasses.FrozenInstanceError):
        ctx.principal = "someone else"  # type: ignore[misc]
    assert dataclasses.replace(ctx, occurrence=1) == toolproof.CallContext("c", "p", occurrence=1)
    meta = toolproof.Meta("t", "c")
    assert dict(meta.extra) == {} and meta == toolproof.Meta("t", "c", extra={})
